"""A self-contained HTML report: one file, no network, every chart drawn before the page's load event.

plotly.js (the optional ``html`` extra) is inlined as it ships, as plotly's ``write_html`` does: it runs
while the page is parsed and the next script draws every chart, so a plain headless screenshot shows them
(why plotly: docs/sweep-html-trace.md). The charts come first (those of the command's table blocks, then the module
icicle or the sweep's fits), then the blocks themselves with the detail.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import groupby
from pathlib import Path

from dummyprof.errors import UsageError
from dummyprof.reports.html_figures import Chart, Section, table_charts
from dummyprof.reports.kinds import KINDS, summary_line
from dummyprof.reports.notices import environment_line, notices
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.tables.escape import html_text as text
from dummyprof.reports.tables.escape import script_json, script_safe
from dummyprof.reports.tables.to_html import TABLE_CSS, html_blocks
from dummyprof.results.session import Results

INSTALL_HINT = 'in your dummyprof clone, pip install -e ".[html]" (plotly)'

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px auto;max-width:1400px;color:#222;
padding:0 16px;box-sizing:border-box}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.2em;margin-top:28px;border-bottom:1px solid #ddd}
.meta,.note{color:#555;font-size:.9em}.notice{color:#8a6d00}
table{border-collapse:collapse;margin:12px 0;font-size:.85em}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f5f5f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{width:100%;min-height:200px;margin:4px 0}.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.pair>.chart{min-width:0}#status{color:#a00}
.dp-table caption{font-size:1.1em;padding:6px 0}p.warn{color:#8a4b00}p.dim{color:#555}
"""


@lru_cache(maxsize=1)
def _plotly_js() -> tuple[str, str]:
    """plotly.js as the installed plotly package ships it, and plotly's version."""
    try:
        import plotly
    except ImportError:
        raise UsageError.for_field("html", f"HTML reports need the optional plotly package: {INSTALL_HINT}") from None
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not source.is_file():
        raise UsageError.for_field(
            "html", f"this plotly install has no bundled plotly.min.js ({source}); {INSTALL_HINT}"
        )
    code = source.read_text(encoding="utf-8")
    if re.search(r"</script|<!--", code, re.IGNORECASE):  # would end or change the inline script
        raise UsageError.for_field("html", f"this plotly.min.js cannot be inlined in a page ({source}); {INSTALL_HINT}")
    return code, str(plotly.__version__)


def require_plotly() -> None:
    """A clear error (exit 2) before measuring, when the report could not be made afterwards."""
    _plotly_js()


def render_html(results: Results, options: RenderOptions | None = None) -> str:
    """The page for ``results``: its charts, then every figure of its terminal report (with the detail)."""
    plotly_js, plotly_version = _plotly_js()
    kind = KINDS[results.command]
    section = kind.section(results)
    blocks = kind.blocks(section, True)
    charts = table_charts(blocks, kind.device(section) if kind.device else results.environment.device)
    said = kind.texts(section)
    sections = [Section("Charts", said, charts)] if charts or said else []
    sections += kind.pictures(section)
    figures: dict[str, str] = {}
    body = [_section_html(section, figures) for section in sections]
    heading = "Every figure: the terminal report in full" if sections else "Report"
    body.append(f"<section><h2>{heading}</h2>\n{html_blocks(blocks)}\n</section>")
    notes = "".join(f'<p class="notice">notice: {text(n)}</p>' for n in notices(results))
    figures_json = script_safe("{" + ",".join(f"{script_json(k)}:{v}" for k, v in figures.items()) + "}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator"
 content="dummyprof {text(results.dummyprof_version)}; plotly.js from plotly {text(plotly_version)}">
<title>dummyprof {text(results.command)}</title><style>{STYLE}{TABLE_CSS}</style></head>
<body data-charts="pending">
<h1>dummyprof {text(results.command)}</h1>
<p><strong>{text(summary_line(results))}</strong></p>
<p class="meta">{text(environment_line(results))}; Python {text(results.environment.python_version)},
{text(results.environment.platform)}; {text(results.created_at)}</p>
{notes}
<p id="status"></p><noscript><p>The charts need JavaScript; the tables hold every figure.</p></noscript>
{"".join(body)}
<script type="application/json" id="figures">{figures_json}</script>
<script id="plotly-js">{plotly_js}</script>
<script>{DRAW}</script>
</body></html>
"""


def _chart_div(chart: Chart, figures: dict[str, str]) -> str:
    fig_id = f"chart-{len(figures) + 1}"
    figures[fig_id] = chart.figure
    return f'<div class="chart" id="{fig_id}"></div>'


def _section_html(section: Section, figures: dict[str, str]) -> str:
    parts = [f"<section><h2>{text(section.title)}</h2>"]
    parts += [f'<p class="note">{text(paragraph)}</p>' for paragraph in section.text]
    for half, charts in groupby(section.figures, key=lambda chart: chart.half):
        divs = [_chart_div(chart, figures) for chart in charts]
        parts += [f'<div class="pair">{"".join(divs)}</div>'] if half else divs  # half width: side by side
    parts.append("</section>")
    return "\n".join(parts)


# Draw every chart while the page is parsed (plotly.js ran just before), then set ``data-charts`` on
# ``<body>``: ``drawn`` (every chart holds a drawn plot) or ``failed`` (the reason on the page; the tables
# still hold every figure).
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

REPORTER = Reporter(
    "html",
    ".html",
    frozenset(KINDS),
    render_html,
    "one self-contained page with interactive charts (plotly.js inlined; needs the html extra)",
)
