/*
 * draw.js - the page's pictures, on canvases: heatmaps (attention weights,
 * a Jacobian), line charts (a loss curve), bars (a vector) and points in the
 * plane (the seed's words). Plain 2-D canvas; every function takes the
 * canvas and the numbers and draws the whole picture again.
 */
'use strict';

const Draw = (function () {
    const INK = '#1f2430', MUTED = '#5b6475', GRID = '#e4e7ed', ACCENT = '#1f5fbf', BAD = '#b42318';
    const FONT = '12px system-ui, "DejaVu Sans", sans-serif';
    const MONO = '12px ui-monospace, "DejaVu Sans Mono", monospace';

    /* The canvas sized w x h CSS pixels, sharp on any screen; returns its context. */
    function setup(canvas, w, h) {
        const dpr = window.devicePixelRatio || 1;
        canvas.style.width = w + 'px';
        canvas.style.height = h + 'px';
        canvas.width = Math.round(w * dpr);
        canvas.height = Math.round(h * dpr);
        const ctx = canvas.getContext('2d');
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.clearRect(0, 0, w, h);
        ctx.fillStyle = '#fff';
        ctx.fillRect(0, 0, w, h);
        return ctx;
    }

    function mix(a, b, t) {
        return a.map((x, i) => Math.round(x + (b[i] - x) * t));
    }

    /* Weight 0..1: white to the accent blue. */
    function seqColor(v) {
        const t = Math.max(0, Math.min(1, v));
        const c = mix([255, 255, 255], [22, 72, 160], Math.pow(t, 0.8));
        return `rgb(${c[0]},${c[1]},${c[2]})`;
    }

    /* Any sign, scaled by max |v|: red below zero, blue above. */
    function divColor(v, max) {
        const t = max > 0 ? Math.max(-1, Math.min(1, v / max)) : 0;
        const c = t < 0 ? mix([255, 255, 255], [180, 35, 24], -t) : mix([255, 255, 255], [22, 72, 160], t);
        return `rgb(${c[0]},${c[1]},${c[2]})`;
    }

    function textWidth(ctx, labels, font) {
        ctx.font = font;
        return labels.reduce((m, s) => Math.max(m, ctx.measureText(s).width), 0);
    }

    /*
     * A matrix as coloured cells. opt: values (rows of numbers), rowLabels,
     * colLabels, decimals (numbers in the cells; null: none), diverging
     * (colour by sign), cell (px), right (a label after each row, e.g. the
     * model's answer: {text, good}), title.
     */
    function heatmap(canvas, opt) {
        const rows = opt.values.length, cols = rows ? opt.values[0].length : 0;
        const cell = opt.cell || 40;
        const rowLabels = opt.rowLabels || [], colLabels = opt.colLabels || [];
        const probe = document.createElement('canvas').getContext('2d');
        const left = Math.ceil(textWidth(probe, rowLabels, MONO)) + (rowLabels.length ? 10 : 0);
        const right = opt.right ? Math.ceil(textWidth(probe, opt.right.map((r) => (r ? r.text : '')), MONO)) + 14 : 0;
        const top = (opt.title ? 20 : 0) + (colLabels.length ? 18 : 0);
        const w = Math.max(left + cols * cell + right + 2, opt.title ? textWidth(probe, [opt.title], FONT) + 4 : 0);
        const h = top + rows * cell + 2;
        const ctx = setup(canvas, Math.ceil(w), h);
        let max = 0;
        for (const r of opt.values) for (const v of r) max = Math.max(max, Math.abs(v));
        if (opt.title) {
            ctx.fillStyle = INK;
            ctx.font = FONT;
            ctx.textAlign = 'left';
            ctx.textBaseline = 'top';
            ctx.fillText(opt.title, 0, 2);
        }
        ctx.font = MONO;
        ctx.textBaseline = 'middle';
        for (let j = 0; j < colLabels.length && j < cols; j++) {
            ctx.fillStyle = MUTED;
            ctx.textAlign = 'center';
            const label = colLabels[j];
            ctx.save();
            ctx.beginPath();
            ctx.rect(left + j * cell, top - 18, cell, 18);
            ctx.clip();
            ctx.fillText(label, left + j * cell + cell / 2, top - 9);
            ctx.restore();
        }
        for (let i = 0; i < rows; i++) {
            const y = top + i * cell;
            if (rowLabels[i] !== undefined) {
                ctx.fillStyle = MUTED;
                ctx.textAlign = 'right';
                ctx.fillText(rowLabels[i], left - 8, y + cell / 2);
            }
            for (let j = 0; j < cols; j++) {
                const v = opt.values[i][j];
                ctx.fillStyle = opt.diverging ? divColor(v, max) : seqColor(v);
                ctx.fillRect(left + j * cell, y, cell - 1, cell - 1);
                if (opt.decimals !== null && opt.decimals !== undefined && cell >= 30) {
                    const dark = opt.diverging ? Math.abs(v) / (max || 1) > 0.55 : v > 0.55;
                    ctx.fillStyle = dark ? '#fff' : INK;
                    ctx.textAlign = 'center';
                    ctx.fillText(fmt(v, opt.decimals), left + j * cell + cell / 2, y + cell / 2);
                }
            }
            if (opt.right && opt.right[i]) {
                ctx.textAlign = 'left';
                ctx.fillStyle = opt.right[i].good === false ? BAD : opt.right[i].good ? '#1a7f37' : MUTED;
                ctx.fillText(opt.right[i].text, left + cols * cell + 8, y + cell / 2);
            }
        }
    }

    function fmt(v, decimals) {
        const s = v.toFixed(decimals);
        return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
    }

    function niceTicks(lo, hi, n) {
        const span = hi - lo || 1;
        const step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
        const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= n) || 10 * mag;
        const ticks = [];
        for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toFixed(10));
        return ticks;
    }

    /*
     * Lines against one x axis. opt: series [{points: [[x, y]...], color,
     * label, dots, axis: 'left'|'right'}], xMax, xLabel, yLabel, logY (the
     * left axis), right: {min, max, label} (a second axis, e.g. accuracy
     * 0..1), width, height.
     */
    function lines(canvas, opt) {
        const W = opt.width || 460, H = opt.height || 240;
        const ctx = setup(canvas, W, H);
        const pad = {l: 48, r: opt.right ? 44 : 12, t: 12, b: 34};
        const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
        const leftSeries = opt.series.filter((s) => s.axis !== 'right');
        let xMax = opt.xMax || 1, yMin = Infinity, yMax = -Infinity;
        for (const s of opt.series) for (const p of s.points) xMax = Math.max(xMax, p[0]);
        for (const s of leftSeries)
            for (const p of s.points)
                if (isFinite(p[1]) && (!opt.logY || p[1] > 0)) {
                    yMin = Math.min(yMin, p[1]);
                    yMax = Math.max(yMax, p[1]);
                }
        if (!isFinite(yMin)) {
            yMin = opt.logY ? 0.01 : 0;
            yMax = 1;
        }
        const tf = opt.logY ? (v) => Math.log10(v) : (v) => v;
        let lo = tf(yMin), hi = tf(yMax);
        if (opt.logY) {
            lo = Math.floor(lo * 2) / 2;
            hi = Math.ceil(hi * 2) / 2;
        } else {
            lo = Math.min(0, lo);
        }
        if (hi - lo < 1e-9) hi = lo + 1;
        const X = (x) => pad.l + (x / xMax) * pw;
        const Y = (y) => pad.t + ph - ((tf(y) - lo) / (hi - lo)) * ph;
        const rlo = opt.right ? opt.right.min : 0, rhi = opt.right ? opt.right.max : 1;
        const YR = (y) => pad.t + ph - ((y - rlo) / (rhi - rlo)) * ph;
        ctx.strokeStyle = GRID;
        ctx.lineWidth = 1;
        ctx.font = FONT;
        ctx.fillStyle = MUTED;
        ctx.textBaseline = 'middle';
        ctx.textAlign = 'right';
        const yt = opt.logY
            ? niceTicks(lo, hi, 5).filter((t) => Math.abs(t - Math.round(t)) < 1e-9).map((t) => Math.pow(10, t))
            : niceTicks(lo, hi, 5);
        for (const t of yt) {
            const y = Y(t);
            ctx.beginPath();
            ctx.moveTo(pad.l, y);
            ctx.lineTo(pad.l + pw, y);
            ctx.stroke();
            ctx.fillText(opt.logY ? formatLog(t) : String(+t.toPrecision(3)), pad.l - 6, y);
        }
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        for (const t of niceTicks(0, xMax, 6)) {
            const x = X(t);
            ctx.beginPath();
            ctx.moveTo(x, pad.t);
            ctx.lineTo(x, pad.t + ph);
            ctx.stroke();
            ctx.fillText(String(t), x, pad.t + ph + 4);
        }
        if (opt.xLabel) ctx.fillText(opt.xLabel, pad.l + pw / 2, H - 14);
        if (opt.right) {
            ctx.textAlign = 'left';
            ctx.textBaseline = 'middle';
            for (const t of niceTicks(rlo, rhi, 4)) ctx.fillText(String(t), pad.l + pw + 6, YR(t));
        }
        ctx.strokeStyle = '#9aa3b2';
        ctx.strokeRect(pad.l, pad.t, pw, ph);
        for (const s of opt.series) {
            const yf = s.axis === 'right' ? YR : Y;
            const pts = s.points.filter((p) => isFinite(p[1]) && (s.axis === 'right' || !opt.logY || p[1] > 0));
            ctx.strokeStyle = ctx.fillStyle = s.color || ACCENT;
            ctx.lineWidth = s.width || 1.5;
            ctx.beginPath();
            pts.forEach((p, k) => (k ? ctx.lineTo(X(p[0]), yf(p[1])) : ctx.moveTo(X(p[0]), yf(p[1]))));
            ctx.stroke();
            if (s.dots)
                for (const p of pts) {
                    ctx.beginPath();
                    ctx.arc(X(p[0]), yf(p[1]), 3, 0, 2 * Math.PI);
                    ctx.fill();
                }
        }
        /* the legend, top right inside the plot */
        ctx.font = FONT;
        ctx.textAlign = 'right';
        ctx.textBaseline = 'middle';
        let ly = pad.t + 10;
        for (const s of opt.series) {
            if (!s.label) continue;
            ctx.fillStyle = MUTED;
            ctx.fillText(s.label, pad.l + pw - 26, ly);
            ctx.strokeStyle = s.color || ACCENT;
            ctx.lineWidth = 2;
            ctx.beginPath();
            ctx.moveTo(pad.l + pw - 22, ly);
            ctx.lineTo(pad.l + pw - 6, ly);
            ctx.stroke();
            ly += 16;
        }
        if (opt.yLabel) {
            ctx.save();
            ctx.translate(11, pad.t + ph / 2);
            ctx.rotate(-Math.PI / 2);
            ctx.textAlign = 'center';
            ctx.fillStyle = MUTED;
            ctx.fillText(opt.yLabel, 0, 0);
            ctx.restore();
        }
    }

    function formatLog(v) {
        return v >= 1 ? String(+v.toPrecision(3)) : v.toExponential(0).replace('e-', 'e-');
    }

    /*
     * Vectors as bars from a zero line (in the middle when a row has both
     * signs). opt: rows [{label, values, color}], names (one per
     * component), decimals, width.
     */
    function bars(canvas, opt) {
        const n = opt.names.length, W = opt.width || 460, rowH = 66;
        const H = 18 + opt.rows.length * rowH;
        const ctx = setup(canvas, W, H);
        const left = 96, slot = (W - left - 8) / n;
        ctx.font = MONO;
        ctx.textBaseline = 'middle';
        ctx.textAlign = 'center';
        ctx.fillStyle = MUTED;
        opt.names.forEach((nm, j) => ctx.fillText(nm, left + slot * j + slot / 2, 8));
        opt.rows.forEach((row, i) => {
            const y0 = 18 + i * rowH;
            let max = 0, neg = false, pos = false;
            for (const v of row.values)
                if (isFinite(v)) {
                    max = Math.max(max, Math.abs(v));
                    neg = neg || v < 0;
                    pos = pos || v > 0;
                }
            /* the zero line, and the room a bar has on each side of it */
            const both = neg && pos;
            const zero = both ? y0 + rowH / 2 : neg ? y0 + 6 : y0 + rowH - 18;
            const room = both ? rowH / 2 - 14 : rowH - 26;
            ctx.fillStyle = INK;
            ctx.textAlign = 'left';
            ctx.fillText(row.label, 0, y0 + rowH / 2);
            ctx.strokeStyle = GRID;
            ctx.beginPath();
            ctx.moveTo(left, zero);
            ctx.lineTo(W - 8, zero);
            ctx.stroke();
            row.values.forEach((v, j) => {
                const x = left + slot * j + slot * 0.2, bw = slot * 0.6;
                const hgt = isFinite(v) && max > 0 ? (Math.abs(v) / max) * room : 0;
                ctx.fillStyle = row.color || ACCENT;
                if (v >= 0) ctx.fillRect(x, zero - hgt, bw, hgt);
                else ctx.fillRect(x, zero, bw, hgt);
                ctx.fillStyle = MUTED;
                ctx.textAlign = 'center';
                const label = isFinite(v) ? fmt(v, opt.decimals || 4) : v < 0 ? '-inf' : String(v);
                ctx.fillText(label, x + bw / 2, v >= 0 ? zero + 9 : zero - 9);
            });
        });
    }

    /*
     * Points in the plane with arrows: opt.points [{x, y, label, hollow,
     * color}], opt.arrows [[from, to]] (indices), size (px).
     */
    function plane(canvas, opt) {
        const S = opt.size || 300;
        const ctx = setup(canvas, S, S);
        let m = 1;
        for (const p of opt.points) m = Math.max(m, Math.abs(p.x), Math.abs(p.y));
        m = Math.ceil(m * 1.25 * 2) / 2;
        const pad = 26, span = S - 2 * pad;
        const X = (x) => pad + ((x + m) / (2 * m)) * span;
        const Y = (y) => pad + span - ((y + m) / (2 * m)) * span;
        ctx.strokeStyle = GRID;
        ctx.lineWidth = 1;
        ctx.font = FONT;
        ctx.fillStyle = MUTED;
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        for (const t of niceTicks(-m, m, 4)) {
            ctx.beginPath();
            ctx.moveTo(X(t), pad);
            ctx.lineTo(X(t), pad + span);
            ctx.moveTo(pad, Y(t));
            ctx.lineTo(pad + span, Y(t));
            ctx.stroke();
            ctx.fillText(String(t), X(t), pad + span + 4);
        }
        ctx.strokeStyle = '#9aa3b2';
        ctx.beginPath();
        ctx.moveTo(X(0), pad);
        ctx.lineTo(X(0), pad + span);
        ctx.moveTo(pad, Y(0));
        ctx.lineTo(pad + span, Y(0));
        ctx.stroke();
        for (const [a, b] of opt.arrows || []) {
            const p = opt.points[a], q = opt.points[b];
            const x0 = X(p.x), y0 = Y(p.y), x1 = X(q.x), y1 = Y(q.y);
            const len = Math.hypot(x1 - x0, y1 - y0);
            if (len < 8) continue;
            const ux = (x1 - x0) / len, uy = (y1 - y0) / len;
            ctx.strokeStyle = ctx.fillStyle = q.color || ACCENT;
            ctx.lineWidth = 1.2;
            ctx.setLineDash([4, 3]);
            ctx.beginPath();
            ctx.moveTo(x0 + ux * 6, y0 + uy * 6);
            ctx.lineTo(x1 - ux * 7, y1 - uy * 7);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.beginPath();
            ctx.moveTo(x1 - ux * 6, y1 - uy * 6);
            ctx.lineTo(x1 - ux * 13 - uy * 4, y1 - uy * 13 + ux * 4);
            ctx.lineTo(x1 - ux * 13 + uy * 4, y1 - uy * 13 - ux * 4);
            ctx.fill();
        }
        ctx.font = MONO;
        ctx.textBaseline = 'bottom';
        ctx.textAlign = 'left';
        for (const p of opt.points) {
            ctx.strokeStyle = ctx.fillStyle = p.color || INK;
            ctx.lineWidth = 2;
            ctx.beginPath();
            ctx.arc(X(p.x), Y(p.y), 5, 0, 2 * Math.PI);
            if (p.hollow) ctx.stroke();
            else ctx.fill();
            ctx.fillText(p.label, X(p.x) + 7, Y(p.y) - 3);
        }
    }

    return {heatmap, lines, bars, plane, fmt};
})();
