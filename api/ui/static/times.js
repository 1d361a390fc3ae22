/* Timestamps in the reader's own time zone, the zone named: the server writes each as
   <time datetime="...Z">... UTC</time> (what shows without scripts). */
"use strict";
(() => {
  const pad = (n) => String(n).padStart(2, "0");
  /* "2026-11-30 06:12:07 UTC+8" for 2026-11-29T22:12:07Z in Shanghai */
  function localTime(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    const off = -d.getTimezoneOffset(), abs = Math.abs(off);
    const zone = off === 0 ? "UTC" : `UTC${off > 0 ? "+" : "-"}${Math.floor(abs / 60)}${abs % 60 ? ":" + pad(abs % 60) : ""}`;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} `
      + `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zone}`;
  }
  function localize(root) {
    for (const t of root.querySelectorAll("time[datetime]")) {
      if (t.dataset.local) continue;
      t.title = t.textContent;  /* the UTC time the server wrote, on hover */
      t.textContent = localTime(t.getAttribute("datetime"));
      t.dataset.local = "1";
    }
  }
  window.localTime = localTime;
  localize(document);
  /* the runs list is swapped in anew as a filter changes */
  document.addEventListener("htmx:afterSettle", () => localize(document));
})();
