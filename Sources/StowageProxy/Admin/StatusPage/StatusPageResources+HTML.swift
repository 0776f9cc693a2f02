extension StatusPageResources {
    /// `GET /`: the page's structure; `/status.js` fills in every figure.
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Stowage proxy status</title>
        <link rel="stylesheet" href="/status.css">
        <script src="/status.js" defer></script>
        </head>
        <body>
        <header>
          <h1>Stowage proxy</h1>
          <p>upstream <code id="upstream">–</code> · up <span id="uptime">–</span> · <span id="state" class="waiting">loading…</span></p>
        </header>
        <main>
          <section>
            <h2>Requests</h2>
            <p class="figure" id="requests-total">–</p>
            <dl>
              <dt id="requests-recent-label">per second, recent</dt><dd id="requests-recent">–</dd>
              <dt>per second, since start</dt><dd id="requests-since-start">–</dd>
              <dt>hit · stale · revalidated</dt><dd id="requests-cached">–</dd>
              <dt>miss · bypass</dt><dd id="requests-forwarded">–</dd>
              <dt>upstream errors</dt><dd id="upstream-errors">–</dd>
            </dl>
          </section>
          <section>
            <h2>Hit ratio</h2>
            <p class="figure" id="hit-ratio">–</p>
            <meter id="hit-ratio-meter" min="0" max="1" value="0"></meter>
            <dl>
              <dt>hits / cacheable lookups</dt><dd id="hit-counts">–</dd>
            </dl>
          </section>
          <section>
            <h2>Bytes served</h2>
            <dl>
              <dt>from the cache</dt><dd id="bytes-cache">–</dd>
              <dt>from the upstream</dt><dd id="bytes-upstream">–</dd>
            </dl>
          </section>
          <section>
            <h2>Cache size</h2>
            <dl>
              <dt>memory</dt><dd id="memory-size">–</dd>
            </dl>
            <meter id="memory-meter" min="0" max="1" value="0"></meter>
            <dl>
              <dt>disk</dt><dd id="disk-size">–</dd>
            </dl>
            <meter id="disk-meter" min="0" max="1" value="0"></meter>
            <dl>
              <dt>spilled answers</dt><dd id="spill-size">–</dd>
            </dl>
          </section>
          <section>
            <h2>Upstream latency</h2>
            <dl>
              <dt>p50 · p99</dt><dd id="latency-percentiles">–</dd>
              <dt>mean · max</dt><dd id="latency-mean">–</dd>
              <dt>exchanges</dt><dd id="latency-samples">–</dd>
            </dl>
          </section>
          <section>
            <h2>Shared tier</h2>
            <p class="figure" id="shared-state">–</p>
            <dl>
              <dt>failed calls</dt><dd id="shared-failures">–</dd>
              <dt>changes waiting</dt><dd id="shared-pending">–</dd>
            </dl>
          </section>
          <section class="wide">
            <h2>Recent purges and bans</h2>
            <table>
              <thead><tr><th>time</th><th>kind</th><th>target</th><th>removed</th></tr></thead>
              <tbody id="invalidations"><tr><td colspan="4">none yet</td></tr></tbody>
            </table>
          </section>
        </main>
        <footer><p>Figures from <a href="/status.json">/status.json</a>, read every 2 s.</p></footer>
        </body>
        </html>

        """#
}
