"""The node identity spec: the id that names this process in the cluster."""

from __future__ import annotations

import os
import re
import secrets
import socket
from abc import ABC, abstractmethod

__all__ = ["MAX_NODE_ID_LENGTH", "DefaultNodeIdentityProvider", "NodeIdentityProvider"]

MAX_NODE_ID_LENGTH = 64


class NodeIdentityProvider(ABC):
    """Names this process in the cluster: claim owners, heartbeats and lock owners."""

    @abstractmethod
    def get_node_id(self) -> str:
        """A cluster-unique id, stable for the life of this process, at most 64 characters."""


class DefaultNodeIdentityProvider(NodeIdentityProvider):
    """``hostname-pid-<8 hex>``: unique per process start, even when a PID is reused."""

    def __init__(self, node_id: str | None = None) -> None:
        if node_id is None:
            try:
                host = socket.gethostname() or "node"
            except OSError:
                host = "node"
            host = re.sub(r"[^A-Za-z0-9.-]", "-", host)
            suffix = f"-{os.getpid()}-{secrets.token_hex(4)}"
            node_id = host[: MAX_NODE_ID_LENGTH - len(suffix)] + suffix
        if not node_id or len(node_id) > MAX_NODE_ID_LENGTH:
            raise ValueError(
                f"Node id {node_id!r} must be 1 to {MAX_NODE_ID_LENGTH} characters long."
            )
        self._node_id = node_id

    def get_node_id(self) -> str:
        return self._node_id
