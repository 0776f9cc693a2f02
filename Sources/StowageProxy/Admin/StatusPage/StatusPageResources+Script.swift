extension StatusPageResources {
    /// `GET /status.js`: reads `/status.json` every 2 s and writes each figure with
    /// `textContent` (never as HTML: purge targets are whatever URL a caller sent).
    static let script = #"""
        "use strict";
        (function () {
          const byId = (id) => document.getElementById(id);
          const show = (id, text) => { const element = byId(id); if (element) element.textContent = text; };
          const count = (n) => Number(n).toLocaleString("en-US");
          const units = ["B", "KB", "MB", "GB", "TB", "PB"];
          function bytes(n) {
            let value = Number(n), unit = 0;
            while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
            return (unit === 0 ? String(value) : value.toFixed(value < 10 ? 2 : 1)) + " " + units[unit];
          }
          const rate = (n) => (n == null ? "–" : Number(n).toFixed(2) + " /s");
          const milliseconds = (n) => Number(n).toFixed(n < 10 ? 2 : 1) + " ms";
          function duration(seconds) {
            let s = Math.floor(seconds);
            const d = Math.floor(s / 86400); s -= d * 86400;
            const h = Math.floor(s / 3600); s -= h * 3600;
            const m = Math.floor(s / 60); s -= m * 60;
            return (d ? d + "d " : "") + (d || h ? h + "h " : "") + (d || h || m ? m + "m " : "") + s + "s";
          }
          function meter(id, value) { const element = byId(id); if (element) element.value = value; }
          function level(idText, idMeter, level) {
            if (!level) { show(idText, "none"); meter(idMeter, 0); return; }
            const entries = level.entries == null ? "" : " · " + count(level.entries) + " entries";
            const setAside = level.setAsideBytes ? " · " + bytes(level.setAsideBytes) + " set aside for requests" : "";
            show(idText, bytes(level.bytes) + " of " + bytes(level.capacityBytes) + entries + setAside);
            meter(idMeter, level.capacityBytes > 0 ? Math.min(1, level.bytes / level.capacityBytes) : 0);
          }
          function cell(row, text) { const td = document.createElement("td"); td.textContent = text; row.appendChild(td); }
          function invalidations(list) {
            const body = byId("invalidations");
            const rows = [];
            for (const item of list) {
              const row = document.createElement("tr");
              cell(row, new Date(item.time).toLocaleTimeString());
              cell(row, String(item.kind));
              cell(row, String(item.target));
              cell(row, count(item.removed));
              rows.push(row);
            }
            if (rows.length === 0) {
              const row = document.createElement("tr");
              const td = document.createElement("td");
              td.colSpan = 4;
              td.textContent = "none yet";
              row.appendChild(td);
              rows.push(row);
            }
            body.replaceChildren(...rows);
          }
          function render(s) {
            show("upstream", s.upstream);
            show("uptime", duration(s.uptimeSeconds));
            const r = s.requests, o = r.byOutcome;
            show("requests-total", count(r.total));
            show("requests-recent-label", r.perSecondRecent == null ? "per second, recent" : "per second, last " + Math.round(r.recentWindowSeconds) + " s");
            show("requests-recent", rate(r.perSecondRecent));
            show("requests-since-start", rate(r.perSecondSinceStart));
            show("requests-cached", count(o.hit) + " · " + count(o.stale) + " · " + count(o.revalidated));
            show("requests-forwarded", count(o.miss) + " · " + count(o.bypass));
            show("upstream-errors", count(r.upstreamErrors));
            const h = s.hitRatio;
            show("hit-ratio", h.ratio == null ? "–" : (h.ratio * 100).toFixed(1) + " %");
            meter("hit-ratio-meter", h.ratio == null ? 0 : h.ratio);
            show("hit-counts", count(h.hits) + " / " + count(h.cacheableLookups));
            show("bytes-cache", bytes(s.bytesServed.fromCache));
            show("bytes-upstream", bytes(s.bytesServed.fromUpstream));
            level("memory-size", "memory-meter", s.cache.memory);
            level("disk-size", "disk-meter", s.cache.disk);
            const spill = s.cache.spill;
            show("spill-size", spill ? count(spill.hits) + " hits · " + bytes(spill.bytes) + " of " + bytes(spill.capacityBytes) : "none yet");
            const l = s.upstreamLatency;
            if (l) {
              show("latency-percentiles", milliseconds(l.p50Milliseconds) + " · " + milliseconds(l.p99Milliseconds));
              show("latency-mean", milliseconds(l.meanMilliseconds) + " · " + milliseconds(l.maxMilliseconds));
              show("latency-samples", count(l.samples) + " in " + Math.round(l.windowSeconds) + " s");
            } else {
              show("latency-percentiles", "no upstream request yet");
              show("latency-mean", "–");
              show("latency-samples", "0");
            }
            const shared = s.sharedTier, state = byId("shared-state");
            if (!shared) {
              show("shared-state", "not configured");
              state.className = "figure quiet";
              show("shared-failures", "–");
              show("shared-pending", "–");
            } else {
              const since = shared.outageSince ? " since " + new Date(shared.outageSince).toLocaleTimeString() : "";
              show("shared-state", shared.healthy ? "healthy" : "outage" + since);
              state.className = "figure " + (shared.healthy ? "ok" : "bad");
              show("shared-failures", count(shared.failures));
              show("shared-pending", count(shared.pendingWrites));
            }
            invalidations(s.recentInvalidations || []);
          }
          async function refresh() {
            const state = byId("state");
            try {
              const response = await fetch("/status.json", { cache: "no-store", credentials: "same-origin" });
              if (!response.ok) throw new Error("HTTP " + response.status);
              const status = await response.json();
              render(status);
              state.textContent = "updated " + new Date(status.generatedAt).toLocaleTimeString();
              state.className = "ok";
            } catch (error) {
              state.textContent = "cannot read /status.json: " + error.message;
              state.className = "bad";
            }
          }
          refresh();
          setInterval(refresh, 2000);
        })();

        """#
}
