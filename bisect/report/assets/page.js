// page.js draws the charts of a perfbisect HTML report with Chart.js from the
// JSON in #perfbisect-data (made by report.WriteHTML). It sets
// document.body.dataset.charts to the number of charts drawn when done.
(function () {
	"use strict";
	var data = JSON.parse(document.getElementById("perfbisect-data").textContent);
	var colour = {
		good: "#1a7f37", bad: "#cf222e", skip: "#9a6700", untested: "#6e7781", old: "#1a7f37", new: "#cf222e",
		rejected: "#57606a", base: "#0969da", head: "#8250df", path: "#8c959f"
	};
	function fade(hex, a) {
		var n = parseInt(hex.slice(1), 16);
		return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
	}
	Chart.defaults.animation = false;
	Chart.defaults.font.size = 11;
	Chart.defaults.maintainAspectRatio = false;

	function axes(spec) {
		var a = {
			x: { type: "linear", title: { display: true, text: spec.x } },
			y: { title: { display: true, text: spec.y } }
		};
		if (spec.xmax) {
			a.x.min = spec.xmin;
			a.x.max = spec.xmax;
		}
		if (spec.kind === "runs" || spec.kind === "series") {
			a.x.ticks = { stepSize: 1, precision: 0 };
		}
		if (spec.kind === "sides") {
			a.x.ticks = { precision: 0 };
			a.y.beginAtZero = true;
		}
		if (spec.kind === "timeline") {
			a.x.min = 0;
			a.y.beginAtZero = true;
		}
		if (spec.y2) {
			a.y2 = { position: "right", beginAtZero: true, title: { display: true, text: spec.y2 }, grid: { drawOnChartArea: false } };
		}
		return a;
	}

	// A band is three lines: its 25th percentile (hidden in the legend), its
	// 75th filled down to the 25th, and its median, dashed.
	function bandSets(spec) {
		var sets = [], x0 = 0, x1 = spec.xmax || 1;
		(spec.bands || []).forEach(function (b) {
			var c = colour[b.class] || colour.untested;
			var line = function (y) { return [{ x: x0, y: y }, { x: x1, y: y }]; };
			sets.push({ label: b.label + " p25", data: line(b.lo), showLine: true, pointRadius: 0, borderWidth: 0, fill: false });
			sets.push({ label: b.label, data: line(b.hi), showLine: true, pointRadius: 0, borderWidth: 0, fill: "-1",
				backgroundColor: fade(c, 0.15), borderColor: c });
			sets.push({ label: b.label + " median", data: line(b.mid), showLine: true, pointRadius: 0, borderWidth: 1.5,
				borderDash: [6, 4], borderColor: c });
		});
		return sets;
	}

	function config(spec) {
		var sets = [];
		if (spec.kind === "runs") {
			sets = bandSets(spec);
		}
		(spec.lines || []).forEach(function (l) {
			var c = colour[l.class] || colour.untested;
			sets.push({ label: l.label, data: (l.points || []).map(function (p) { return { x: p.x, y: p.y }; }), showLine: true,
				pointRadius: spec.kind === "path" ? 0 : spec.kind === "sides" ? 4 : 1.5, borderWidth: spec.kind === "path" ? 1 : 1.5, borderColor: c,
				backgroundColor: c, borderDash: l.dashed ? [5, 3] : [], yAxisID: l.axis || "y", order: 2 });
		});
		if (spec.points && spec.points.length) {
			sets.push({
				label: spec.kind === "path" ? "tested commits" : "runs",
				data: spec.points.map(function (p) { return { x: p.x, y: p.y }; }),
				pointRadius: spec.kind === "series" ? 3 : 4, pointHoverRadius: 6, order: 1,
				pointStyle: spec.points.map(function (p) { return p.class === "rejected" ? "crossRot" : "circle"; }),
				backgroundColor: spec.points.map(function (p) { return colour[p.class] || colour.untested; }),
				borderColor: spec.points.map(function (p) { return colour[p.class] || colour.untested; })
			});
		}
		var pointsSet = sets.length - 1;
		return {
			type: "scatter",
			data: { datasets: sets },
			options: {
				scales: axes(spec),
				plugins: {
					title: { display: true, text: spec.title },
					legend: { labels: { boxWidth: 12, filter: function (item) { return !/ (p25|median)$/.test(item.text); } } },
					tooltip: {
						callbacks: {
							label: function (ctx) {
								if (ctx.datasetIndex === pointsSet && spec.points && spec.points[ctx.dataIndex]) {
									return spec.points[ctx.dataIndex].label;
								}
								return ctx.dataset.label + ": " + ctx.parsed.y.toPrecision(4);
							}
						}
					}
				}
			}
		};
	}

	// One chart that cannot be drawn must not take the others (or the
	// page's "done" mark) with it: its error goes to the console.
	// A differential flame graph: root on top, each frame as wide as the
	// larger side's time on its path, coloured by the change.
	function flame(spec) {
		var box = document.getElementById(spec.id);
		if (!box) {
			throw new Error("no box for flame graph " + spec.id);
		}
		var root = spec.flame, width = box.clientWidth || 1000, depth = 0;
		var total = Math.max(root.base_us, root.head_us) || 1;
		function draw(f, x, d) {
			var w = width * Math.max(f.base_us, f.head_us) / total;
			if (w < 1) {
				return;
			}
			depth = Math.max(depth, d + 1);
			var el = document.createElement("div");
			var ch = f.base_us > 0 ? f.head_us / f.base_us - 1 : 1;
			var a = Math.min(Math.abs(ch), 1) * 0.75 + 0.1;
			el.style.left = x + "px";
			el.style.top = (d * 16) + "px";
			el.style.width = w + "px";
			el.style.background = ch >= 0 ? "rgba(207,34,46," + a + ")" : "rgba(9,105,218," + a + ")";
			el.textContent = w > 30 ? f.name : "";
			el.title = f.name + ": " + f.base_us.toFixed(1) + " -> " + f.head_us.toFixed(1) + " us per transaction" +
				(f.base_us > 0 ? " (" + (ch >= 0 ? "+" : "") + (100 * ch).toFixed(1) + "%)" : " (head only)");
			el.dataset.frame = f.name;
			box.appendChild(el);
			var cx = x;
			(f.children || []).forEach(function (c) {
				draw(c, cx, d + 1);
				cx += width * Math.max(c.base_us, c.head_us) / total;
			});
		}
		draw(root, 0, 0);
		box.style.height = (depth * 16) + "px";
	}

	var drawn = 0;
	(data.charts || []).forEach(function (spec) {
		try {
			if (spec.kind === "flame") {
				flame(spec);
				drawn++;
				return;
			}
			var canvas = document.getElementById(spec.id);
			if (!canvas) {
				throw new Error("no canvas for chart " + spec.id);
			}
			new Chart(canvas, config(spec));
			drawn++;
		} catch (e) {
			console.error("perfbisect report: chart " + spec.id + ": " + e);
		}
	});
	document.body.dataset.charts = String(drawn);
})();
