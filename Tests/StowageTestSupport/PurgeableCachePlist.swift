/// An `APUserCacheCleaner` `PurgeableCache.plist`, as Xcode writes it: an array of
/// dictionaries, `Path` + `Entries` with `*` wildcards, and `Class` + `Selectors`. The clean
/// manifest's tests parse it; the CLI's tests clean with it.
public let purgeableCachePlist = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <array>
    	<dict>
    		<key>Path</key>
    		<string>Documents/Caches</string>
    		<key>Entries</key>
    		<array>
    			<string>*.tmp</string>
    			<string>image_*</string>
    		</array>
    	</dict>
    	<dict>
    		<key>Path</key>
    		<string>Library/Caches/WebCache</string>
    	</dict>
    	<dict>
    		<key>Class</key>
    		<string>APCacheCleanHandler</string>
    		<key>Selectors</key>
    		<array>
    			<string>cleanMemoryCache</string>
    			<string>cleanDiskCache</string>
    		</array>
    	</dict>
    </array>
    </plist>
    """
