"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  // rows are keyed by their position k (data-row, #row-k); r.i is the Index the table prints (shared by the rows of
  // one fusion unit)
  const byRow = new Map(data.rows.map((r) => [r.k, r]));
  const esc = (s) => String(s == null ? "" : s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const num = (v) => (v == null ? "NaN" : Number(v).toPrecision(6));

  // one side of a histogram: [lo, hi, min, max, nan, +inf, -inf, counts...]
  const side = (a) => ({ lo: a[0], hi: a[1], min: a[2], max: a[3], nan: a[4], pinf: a[5], ninf: a[6], counts: a.slice(7) });

  function histSvg(h) {
    const W = 520, H = 170, L = 8, B = 22;
    const npu = side(h[0]), gt = side(h[1]), n = npu.counts.length;
    const top = Math.max(1, ...npu.counts, ...gt.counts);
    const x = (v) => L + ((v - npu.lo) / (npu.hi - npu.lo)) * (W - 2 * L);
    const bw = (W - 2 * L) / n;
    let s = `<svg class="hist" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`;
    npu.counts.forEach((c, k) => {
      const bh = (c / top) * (H - B - 8);
      s += `<rect class="bar" x="${(L + k * bw).toFixed(1)}" y="${(H - B - bh).toFixed(1)}" width="${Math.max(bw - 0.5, 0.5).toFixed(1)}" height="${bh.toFixed(1)}"><title>device ${c}</title></rect>`;
    });
    let d = "";
    gt.counts.forEach((c, k) => {
      const y = (H - B - (c / top) * (H - B - 8)).toFixed(1);
      d += `${k ? "L" : "M"}${(L + k * bw).toFixed(1)},${y}L${(L + (k + 1) * bw).toFixed(1)},${y}`;
    });
    s += `<path class="gt" d="${d}"><title>ground truth</title></path>`;
    for (const [name, hh] of [["device", npu], ["ground truth", gt]]) {
      for (const [what, v] of [["min", hh.min], ["max", hh.max]]) {
        if (v != null) s += `<line class="mm" x1="${x(v).toFixed(1)}" x2="${x(v).toFixed(1)}" y1="4" y2="${H - B}"><title>${name} ${what} ${num(v)}</title></line>`;
      }
    }
    s += `<text x="${L}" y="${H - 6}">${num(npu.lo)}</text><text x="${W - L}" y="${H - 6}" text-anchor="end">${num(npu.hi)}</text></svg>`;
    for (const [name, hh] of [["device", npu], ["ground truth", gt]]) {
      if (hh.nan || hh.pinf || hh.ninf) s += `<p>${name}: ${hh.nan} NaN, ${hh.pinf} +inf, ${hh.ninf} -inf (not in the bins)</p>`;
    }
    return s;
  }

  const headers = Array.from(document.querySelectorAll("#rows thead th")).map((th) => th.textContent);

  function openRow(i, scroll) {
    const r = byRow.get(i);
    if (!r) return;
    document.querySelectorAll(".sel").forEach((e) => e.classList.remove("sel"));
    document.querySelectorAll(`[data-row="${i}"]`).forEach((e) => e.classList.add("sel"));
    const box = document.getElementById("details");
    box.hidden = false;
    box.dataset.open = String(i);
    document.getElementById("d-title").textContent = `#${r.i} ${r.name}`;
    const cells = data.cells[r.k];
    let h = "<table>" + headers.map((name, k) => (cells[k] !== "" ? `<tr><th>${esc(name)}</th><td>${esc(cells[k])}</td></tr>` : "")).join("") + "</table>";
    // extra metric columns (custom algorithms, metric plug-ins): a NaN cell of a compared row says why
    const reason = cells[headers.indexOf("CompareFailReason")];
    const missing = (data.extra || []).filter((name) => r.st === "compared" && cells[headers.indexOf(name)] === "NaN");
    if (missing.length) h += `<p class="extra-nan">${esc(missing.join(", "))}: NaN, not computed: ${esc(reason || "no reason given")}</p>`;
    h += `<p>${esc(r.cls === "constant" ? "a weight or constant (an input no dumped operator produces)" : "an activation")}</p>`;
    if (r.range) {
      const g = r.range;
      h += `<p>device ${num(g[0])} .. ${num(g[1])} (${g[5]} NaN, ${g[6]} inf); ground truth ${num(g[2])} .. ${num(g[3])} (${g[7]} NaN, ${g[8]} inf); ${g[4]} elements</p>`;
    }
    if (r.locate) h += `<p>locate: own cosine ${num(r.locate.own)}, inherited ${num(r.locate.inherited)}, total ${num(r.locate.total)} ${esc(r.locate.verdict)}</p>`;
    const adv = data.advice.filter((a) => a.key === r.k);
    if (adv.length) h += "<ul>" + adv.map((a) => `<li><b>${esc(a.rule)}</b>: ${esc(a.message)}</li>`).join("") + "</ul>";
    if (r.hist) h += `<h3>Histogram (blue: device, black: ground truth, red dashed: min and max)</h3>${histSvg(r.hist)}`;
    else if (r.range) h += `<p class="note">No histogram embedded for this layer (this report holds the worst layers'; dumpcmp report --histograms all embeds every layer's).</p>`;
    if (r.top && r.top.length) {
      h += "<h3>Largest element errors</h3><table><tr><th>Index</th><th>NPUDump</th><th>GroundTruth</th><th>AbsoluteError</th></tr>" +
        r.top.map((t) => `<tr><td>${t[0]}</td><td>${num(t[1])}</td><td>${num(t[2])}</td><td>${num(t[3])}</td></tr>`).join("") + "</table>";
    }
    document.getElementById("d-body").innerHTML = h;
    if (scroll) box.scrollIntoView({ block: "nearest" });
  }

  function fromHash() {
    const m = /^#row-(\d+)$/.exec(location.hash);
    if (m) openRow(Number(m[1]), true);
  }
  document.addEventListener("click", (ev) => {
    const t = ev.target.closest("[data-row]");
    if (!t) return;
    const i = Number(t.getAttribute("data-row"));
    if (location.hash !== `#row-${i}`) history.replaceState(null, "", `#row-${i}`);
    openRow(i, t.tagName.toLowerCase() === "circle");
  });
  window.addEventListener("hashchange", fromHash);

  // table: a page of rows at a time; sort by a header click (numbers numerically, NaN and empty last), filter by
  // text / status / class over all rows
  const PAGE = 200;
  const table = document.getElementById("rows");
  const tbody = table.tBodies[0];
  const text = data.cells.map((c) => c.join(" ").toLowerCase());
  let order = data.rows.map((_, k) => k);
  let shown = order, page = 0;
  function draw() {
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    const open = document.getElementById("details").dataset.open;
    tbody.innerHTML = shown.slice(page * PAGE, (page + 1) * PAGE).map((k) => {
      const r = data.rows[k];
      const cls = r.st + (r.cls === "constant" ? " const" : "") + (String(r.k) === open ? " sel" : "");
      return `<tr id="r${r.k}" data-row="${r.k}" data-status="${r.st}" data-cls="${r.cls}" class="${cls}">` +
        data.cells[k].map((c) => `<td>${esc(c)}</td>`).join("") + "</tr>";
    }).join("");
    const first = shown.length ? page * PAGE + 1 : 0;
    document.getElementById("shown").textContent = ` rows ${first}-${Math.min((page + 1) * PAGE, shown.length)} of ${shown.length} (${data.rows.length} in all) `;
  }
  function applyFilter() {
    const q = filter.value.toLowerCase(), st = status.value, c = cls.value;
    shown = order.filter((k) => (!st || data.rows[k].st === st) && (!c || data.rows[k].cls === c) && (!q || text[k].includes(q)));
    page = 0;
    draw();
  }
  table.tHead.addEventListener("click", (ev) => {
    const th = ev.target.closest("th");
    if (!th) return;
    const col = th.cellIndex;
    const asc = !th.classList.contains("asc");
    table.tHead.querySelectorAll("th").forEach((h) => h.classList.remove("asc", "desc"));
    th.classList.add(asc ? "asc" : "desc");
    const key = (k) => {
      const s = data.cells[k][col];
      const v = Number(s);
      return s !== "" && Number.isFinite(v) ? v : s === "NaN" || s === "" ? null : s;
    };
    order = order.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return (asc ? c : -c) || a - b;
    });
    applyFilter();
  });
  const filter = document.getElementById("filter"), status = document.getElementById("status"), cls = document.getElementById("cls");
  [filter, status, cls].forEach((e) => e.addEventListener("input", applyFilter));
  document.getElementById("prev").addEventListener("click", () => { page--; draw(); });
  document.getElementById("next").addEventListener("click", () => { page++; draw(); });
  applyFilter();
  fromHash();
  document.body.dataset.ready = "1";
})();
