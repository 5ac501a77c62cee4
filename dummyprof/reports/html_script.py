"""The HTML report's one script: unpack plotly.js and draw every chart while the page is parsed.

plotly.js (4.8 MB) is embedded DEFLATE-compressed and base64-encoded (about 2 MB). The
script inflates it synchronously (``INFLATE``, a small decoder of RFC 1951, after Mark
Adler's puff.c: a browser's own ``DecompressionStream`` is asynchronous and would finish
after the load event), runs it, and draws every chart before the parser goes on, so the
charts are on the page by the time its load event fires and a plain headless screenshot
shows them. It then sets ``data-charts`` on ``<body>`` to ``drawn`` (every chart holds
a drawn plot) or ``failed`` (the reason is shown on the page; the tables still hold every
figure).
"""

from __future__ import annotations

INFLATE = """
function inflateRaw(src, size) {
  const out = new Uint8Array(size);
  let op = 0, ip = 0, bitbuf = 0, bitcnt = 0;
  const bits = (n) => {
    while (bitcnt < n) {
      if (ip >= src.length) throw new Error("truncated data");
      bitbuf |= src[ip++] << bitcnt;
      bitcnt += 8;
    }
    const value = bitbuf & ((1 << n) - 1);
    bitbuf >>>= n;
    bitcnt -= n;
    return value;
  };
  // Canonical Huffman codes as counts per length and symbols in code order (puff.c).
  const build = (lengths) => {
    const count = new Uint16Array(16), offs = new Uint16Array(16), symbol = new Uint16Array(lengths.length);
    for (const len of lengths) count[len]++;
    count[0] = 0;
    for (let len = 1; len < 15; len++) offs[len + 1] = offs[len] + count[len];
    lengths.forEach((len, s) => { if (len) symbol[offs[len]++] = s; });
    return {count, symbol};
  };
  const decode = (h) => {
    let code = 0, first = 0, index = 0;
    for (let len = 1; len < 16; len++) {
      code |= bits(1);
      const count = h.count[len];
      if (code - count < first) return h.symbol[index + (code - first)];
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    throw new Error("bad code");
  };
  const LBASE = [3,4,5,6,7,8,9,10,11,13,15,17,19,23,27,31,35,43,51,59,67,83,99,115,131,163,195,227,258];
  const LEXT = [0,0,0,0,0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3,4,4,4,4,5,5,5,5,0];
  const DBASE = [1,2,3,4,5,7,9,13,17,25,33,49,65,97,129,193,257,385,513,769,1025,1537,2049,3073,4097,6145,
    8193,12289,16385,24577];
  const DEXT = [0,0,0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,7,8,8,9,9,10,10,11,11,12,12,13,13];
  const codes = (lencode, distcode) => {
    for (;;) {
      let sym = decode(lencode);
      if (sym < 256) {
        if (op >= size) throw new Error("more data than expected");
        out[op++] = sym;
      } else if (sym === 256) {
        return;
      } else {
        sym -= 257;
        if (sym >= 29) throw new Error("bad length");
        const len = LBASE[sym] + bits(LEXT[sym]);
        const dsym = decode(distcode);
        if (dsym >= 30) throw new Error("bad distance");
        const dist = DBASE[dsym] + bits(DEXT[dsym]);
        if (dist > op || op + len > size) throw new Error("bad distance or size");
        for (let i = 0; i < len; i++, op++) out[op] = out[op - dist];
      }
    }
  };
  const FIXED = new Uint8Array(288).map((_, s) => (s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8));
  const ORDER = [16,17,18,0,8,7,9,6,10,5,11,4,12,3,13,2,14,1,15];
  let last;
  do {
    last = bits(1);
    const type = bits(2);
    if (type === 0) {  // stored
      bitbuf = bitcnt = 0;
      if (ip + 4 > src.length) throw new Error("truncated data");
      const len = src[ip] | (src[ip + 1] << 8);
      if ((len ^ 0xffff) !== (src[ip + 2] | (src[ip + 3] << 8))) throw new Error("bad stored block");
      ip += 4;
      if (ip + len > src.length || op + len > size) throw new Error("bad stored length");
      out.set(src.subarray(ip, ip + len), op);
      ip += len;
      op += len;
    } else if (type === 1) {  // fixed Huffman codes
      codes(build(FIXED), build(new Uint8Array(30).fill(5)));
    } else if (type === 2) {  // dynamic Huffman codes
      const nlen = bits(5) + 257, ndist = bits(5) + 1, ncode = bits(4) + 4;
      const order = new Uint8Array(19);
      for (let i = 0; i < ncode; i++) order[ORDER[i]] = bits(3);
      const lencode = build(order);
      const lengths = new Uint8Array(nlen + ndist);
      for (let index = 0; index < nlen + ndist; ) {
        const sym = decode(lencode);
        if (sym < 16) {
          lengths[index++] = sym;
          continue;
        }
        let len = 0, repeat;
        if (sym === 16) {
          if (index === 0) throw new Error("repeat with no length");
          len = lengths[index - 1];
          repeat = 3 + bits(2);
        } else {
          repeat = sym === 17 ? 3 + bits(3) : 11 + bits(7);
        }
        if (index + repeat > nlen + ndist) throw new Error("too many lengths");
        lengths.fill(len, index, index + repeat);
        index += repeat;
      }
      codes(build(lengths.subarray(0, nlen)), build(lengths.subarray(nlen)));
    } else {
      throw new Error("bad block type");
    }
  } while (!last);
  if (op !== size) throw new Error("unexpected size");
  return out;
}
"""

DRAW = """
(() => {
  const status = document.getElementById("status");
  const fail = (error) => {
    document.body.dataset.charts = "failed";
    status.textContent = "The charts could not be drawn: " + error.message +
      " (the tables below still hold every figure).";
    console.error(error);
  };
  try {
    const packed = document.getElementById("plotly-js");
    const binary = atob(packed.textContent.trim());
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const script = document.createElement("script");
    script.textContent = new TextDecoder().decode(inflateRaw(bytes, Number(packed.dataset.size)));
    document.head.appendChild(script);  // an inserted inline script runs at once
    if (typeof Plotly === "undefined") throw new Error("plotly.js did not run");
    const figures = JSON.parse(document.getElementById("figures").textContent);
    const drawing = [];
    for (const [id, figure] of Object.entries(figures)) {
      const div = document.getElementById(id);
      // A fixed height: responsive re-layouts then change only the width, never overlap the next chart.
      div.style.height = (figure.layout.height || 450) + "px";
      drawing.push(Plotly.newPlot(div, figure.data, figure.layout, {displaylogo: false, responsive: true}));
    }
    const undrawn = Object.keys(figures).filter((id) => !document.getElementById(id).querySelector("svg.main-svg"));
    if (undrawn.length) throw new Error("not drawn: " + undrawn.join(", "));
    document.body.dataset.charts = "drawn";
    Promise.all(drawing).catch(fail);
  } catch (error) {
    fail(error);
  }
})();
"""
