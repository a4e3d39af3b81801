#!/usr/bin/env python3
"""Plots a gpudirect_study.py results.json as an SVG (stdlib only): for each application, GPUDirect
communication time relative to 1 rank per node, against ranks (GPUs) per node, one line per rank count,
solid on the plain platform and dashed with the network scaled with the ranks per node (Observation 5);
the GPUDirect gain over HostCopy at 1 rank per node is in each panel's title (Observation 1).

Usage: bench/gpudirect/plot_study.py RESULTS.json OUT.svg
"""
import json
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def main() -> int:
    results = json.load(open(sys.argv[1]))
    apps = sorted({r["app"] for r in results})
    nps = sorted({r["np"] for r in results})
    rpns = sorted({r["rpn"] for r in results})

    def get(app, np_, rpn, plat, mode):
        for r in results:
            if (r["app"], r["np"], r["rpn"], r["platform"], r["mode"]) == (app, np_, rpn, plat, mode):
                return r["comm_s"]
        return None

    base = lambda k: "lassen6" if k == 6 else "lassen"  # noqa: E731
    W, H, PAD = 300, 240, 45
    ymax = 4.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(apps)}" height="{H + 40}" '
           'font-family="sans-serif" font-size="11">']
    for i, app in enumerate(apps):
        x0 = i * W
        h = get(app, nps[0], 1, "lassen", "hostcopy")
        g = get(app, nps[0], 1, "lassen", "gpudirect")
        gain = f"GPUDirect gain {100 * (1 - g / h):.0f}% (np {nps[0]})" if h and g else ""
        out.append(f'<text x="{x0 + W / 2}" y="14" text-anchor="middle" font-weight="bold">{app}-like</text>')
        out.append(f'<text x="{x0 + W / 2}" y="28" text-anchor="middle">{gain}</text>')
        px = lambda k: x0 + PAD + (rpns.index(k)) * (W - 2 * PAD) / max(1, len(rpns) - 1)  # noqa: E731
        py = lambda v: 40 + (H - 40 - PAD) * (1 - min(v, ymax) / ymax)  # noqa: E731
        out.append(f'<line x1="{x0 + PAD}" y1="{py(0)}" x2="{x0 + W - PAD}" y2="{py(0)}" stroke="black"/>')
        out.append(f'<line x1="{x0 + PAD}" y1="{py(0)}" x2="{x0 + PAD}" y2="{py(ymax)}" stroke="black"/>')
        for v in (1, 2, 3, 4):
            out.append(f'<text x="{x0 + PAD - 5}" y="{py(v) + 4}" text-anchor="end">x{v}</text>')
            out.append(f'<line x1="{x0 + PAD}" y1="{py(v)}" x2="{x0 + W - PAD}" y2="{py(v)}" stroke="#ddd"/>')
        for k in rpns:
            out.append(f'<text x="{px(k)}" y="{py(0) + 14}" text-anchor="middle">{k}</text>')
        out.append(f'<text x="{x0 + W / 2}" y="{py(0) + 28}" text-anchor="middle">ranks (GPUs) per node</text>')
        for j, n in enumerate(nps):
            one = get(app, n, 1, "lassen", "gpudirect")
            for dashed, plat_of in ((False, base), (True, lambda k: base(k) if k == 1 else f"lassen6-bw{k}")):
                pts = [(px(k), py(v / one)) for k in rpns if (v := get(app, n, k, plat_of(k), "gpudirect"))]
                if len(pts) > 1:
                    d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
                    dash = ' stroke-dasharray="4,3"' if dashed else ""
                    out.append(f'<polyline points="{d}" fill="none" stroke="{COLOURS[j % 5]}" stroke-width="1.5"{dash}/>')
            out.append(f'<text x="{x0 + W - PAD + 2}" y="{50 + 12 * j}" fill="{COLOURS[j % 5]}">np {n}</text>')
    out.append(f'<text x="10" y="{H + 32}">GPUDirect communication time relative to 1 rank per node; '
               'solid: lassen (6/node: lassen6), dashed: network scaled with the ranks per node.</text>')
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
