"""A self-contained HTML report: one file, no network, charts drawn by plotly.js.

plotly.js comes from the ``plotly`` Python package (the optional ``html`` extra),
gzip-compressed and base64-encoded into the page (4.8 MB of JavaScript becomes
about 2 MB), and unpacked in the browser with the standard ``DecompressionStream``
before the charts are drawn. See docs/sweep-html-trace.md for why plotly and why
this packing. Torch-free: a saved results file renders anywhere.
"""

from __future__ import annotations

import base64
import gzip
import html
from functools import lru_cache
from pathlib import Path

from dummyprof.errors import UsageError
from dummyprof.reports.html_figures import SECTIONS, Section, figures_json
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.summary import summary_line
from dummyprof.results.session import Results

KINDS = frozenset(SECTIONS)
INSTALL_HINT = "pip install 'dummyprof[html]' (plotly)"

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#222;
padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.2em;margin-top:32px;border-bottom:1px solid #ddd}
.meta,.note{color:#666;font-size:.9em}.notice{color:#8a6d00}
table{border-collapse:collapse;margin:12px 0;font-size:.85em}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f5f5f5}
tr.verdict-regressed td{background:#fde0e0}tr.verdict-improved td{background:#e0ecfd}
tr.verdict-not-comparable td,tr.verdict-could-not-measure td{background:#fff3d6}
.chart{min-height:300px;margin:8px 0}#status{color:#a00}
"""

LOADER = """
(async () => {
  const status = document.getElementById("status");
  try {
    if (typeof DecompressionStream === "undefined") {
      throw new Error("this browser has no DecompressionStream (Chrome 80+, Firefox 113+, Safari 16.4+)");
    }
    const packed = document.getElementById("plotly-js-gzip").textContent.trim();
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const script = document.createElement("script");
    script.textContent = await new Response(stream).text();
    document.head.appendChild(script);
    const figures = JSON.parse(document.getElementById("figures").textContent);
    for (const [id, figure] of Object.entries(figures)) {
      // A fixed height: responsive re-layouts then change only the width, never overlap the next chart.
      document.getElementById(id).style.height = (figure.layout.height || 450) + "px";
      await Plotly.newPlot(id, figure.data, figure.layout, {displaylogo: false, responsive: true});
    }
    document.body.dataset.charts = "drawn";
    status.textContent = "";
  } catch (error) {
    document.body.dataset.charts = "failed";
    status.textContent = "The charts could not be drawn: " + error.message +
      " (the tables below still hold every figure).";
    console.error(error);
  }
})();
"""


@lru_cache(maxsize=1)
def _packed_plotly_js() -> tuple[str, str]:
    """plotly.js from the installed plotly package, gzipped and base64-encoded, and its version."""
    try:
        import plotly
    except ImportError:
        raise UsageError.for_field("html", f"HTML reports need the optional plotly package: {INSTALL_HINT}") from None
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not source.is_file():
        raise UsageError.for_field(
            "html", f"this plotly install has no bundled plotly.min.js ({source}); {INSTALL_HINT}"
        )
    packed = base64.b64encode(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0)).decode("ascii")
    return packed, str(plotly.__version__)


def require_plotly() -> None:
    """A clear error (exit 2) before measuring, when the report could not be made afterwards."""
    _packed_plotly_js()


def render_html(results: Results) -> str:
    builder = SECTIONS.get(results.command)
    if builder is None:
        kinds = ", ".join(sorted(KINDS))
        raise UsageError.for_field("format", f"no HTML report for {results.command!r} results; HTML renders: {kinds}")
    packed, plotly_version = _packed_plotly_js()
    sections = builder(results)
    figures: dict[str, str] = {}
    body: list[str] = []
    for section in sections:
        body.append(_section_html(section, figures))
    env = results.environment
    esc = html.escape
    notices = "".join(f'<p class="notice">notice: {esc(n)}</p>' for n in results.notices)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator"
 content="dummyprof {esc(results.dummyprof_version)}; plotly.js from plotly {esc(plotly_version)}">
<title>dummyprof {esc(results.command)}</title><style>{STYLE}</style></head>
<body data-charts="pending">
<h1>dummyprof {esc(results.command)}</h1>
<p><strong>{esc(summary_line(results))}</strong></p>
<p class="meta">dummyprof {esc(results.dummyprof_version)}, torch {esc(env.torch_version)}, {esc(env.device)}
({esc(env.device_name)}), CPU {esc(env.cpu_model)} x{env.cpu_count}, {results.created_at}</p>
{notices}
<p id="status">Drawing charts…</p>
{"".join(body)}
<script type="application/json" id="figures">{figures_json(figures)}</script>
<script type="application/octet-stream" id="plotly-js-gzip">{packed}</script>
<script>{LOADER}</script>
</body></html>
"""


def _section_html(section: Section, figures: dict[str, str]) -> str:
    parts = [f"<section><h2>{html.escape(section.title)}</h2>"]
    parts += [f'<p class="note">{html.escape(text)}</p>' for text in section.text]
    for figure in section.figures:
        fig_id = f"chart-{len(figures) + 1}"
        figures[fig_id] = figure
        parts.append(f'<div class="chart" id="{fig_id}"></div>')
    parts += section.tables
    parts.append("</section>")
    return "\n".join(parts)


def _render(results: Results, options: RenderOptions) -> str:
    return render_html(results)


REPORTER = Reporter(
    "html",
    ".html",
    KINDS,
    _render,
    "one self-contained page with interactive charts (plotly.js inlined; needs the html extra)",
)
