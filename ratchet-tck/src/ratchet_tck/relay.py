"""A TCP relay on loopback for coordinator and store tests: take a server away for real.

:meth:`TcpRelay.cut` closes every relayed connection and refuses new ones (clients see the
socket close, exactly as when a server dies), :meth:`TcpRelay.stall` keeps the sockets
open but stops moving bytes (a half-open connection), and :meth:`TcpRelay.restore` brings
the path back on the same port. The real server is never restarted.
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["TcpRelay"]


class TcpRelay:
    """Relays ``127.0.0.1:port`` to ``target``; can cut or stall the path and restore it."""

    def __init__(self, target: tuple[str, int], *, listening: bool = True) -> None:
        """With ``listening=False`` the port is only reserved and refuses connections until
        :meth:`restore`: a server that comes up after its clients started."""
        self.target = target
        self.port = 0
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._flowing = threading.Event()
        self._flowing.set()
        if listening:
            self.restore()
        else:
            with socket.socket() as probe:  # a free port, bound again by restore()
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]

    def restore(self) -> None:
        """Accept connections again (on the same port) and move bytes again."""
        self._flowing.set()
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(64)
            self.port = listener.getsockname()[1]
            self._listener = listener
        threading.Thread(
            target=self._accept, args=(listener,), name="tcp-relay-accept", daemon=True
        ).start()

    def cut(self) -> None:
        """Close every relayed connection and refuse new ones until :meth:`restore`."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            _close(listener)
        for sock in sockets:
            _close(sock)
        self._flowing.set()  # let stalled pumps notice their sockets are gone

    def stall(self) -> None:
        """Keep every connection open but stop relaying bytes (a half-open path)."""
        self._flowing.clear()

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _peer = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _close(client)
                    _close(upstream)
                    return
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), name="tcp-relay-pump", daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                self._flowing.wait()
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.discard(source)
                self._sockets.discard(sink)
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept() or recv()
    with contextlib.suppress(OSError):
        sock.close()
