@_exported import StowageCache
@_exported import StowageCore
