"""The engine: poller, executor, runner, heartbeat and maintenance. Private; free to change."""
