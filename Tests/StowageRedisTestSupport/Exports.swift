// RedisServerProcess lives beside ChildProcess, where the bench uses it too.
@_exported import StowageProcessSupport
