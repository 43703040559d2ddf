/*
 * seed.js - section 1, the seed example: three words as 2-d vectors, Q = K
 * = V = x, weights = softmax(x x^T / sqrt(2)), output = weights x. The
 * numbers come from the library's ops (agw_seed in web/glue.c, the ops of
 * `attograd demo`), recomputed as you type.
 */
'use strict';

const Seed = (function () {
    const WORDS = [
        ['cat', 1, 0],
        ['sat', 0, 1],
        ['mat', 1, 1],
    ];
    const COLORS = ['#1f5fbf', '#c2410c', '#15803d'];
    let rows = [];

    function build() {
        const body = Page.$('seed-vectors');
        rows = WORDS.map(([name, a, b], i) => {
            const tr = document.createElement('tr');
            const cells = [name, String(a), String(b)].map((v, k) => {
                const td = document.createElement('td');
                const input = document.createElement('input');
                input.type = 'text';
                input.value = v;
                input.className = k === 0 ? 'name' : '';
                input.setAttribute('aria-label', k === 0 ? `word ${i + 1}` : `word ${i + 1}, x${k}`);
                input.id = `seed-${i}-${k}`;
                input.addEventListener('input', update);
                td.appendChild(input);
                tr.appendChild(td);
                return input;
            });
            body.appendChild(tr);
            return cells;
        });
        Page.$('seed-reset').addEventListener('click', () => {
            WORDS.forEach((w, i) => w.forEach((v, k) => (rows[i][k].value = String(v))));
            update();
        });
    }

    /* The table's words and vectors, or a message naming the first bad cell. */
    function read() {
        const names = [], x = [];
        let bad = null;
        rows.forEach((cells, i) => {
            const name = cells[0].value.trim() || `word ${i + 1}`;
            names.push(name);
            cells[0].classList.remove('invalid');
            for (let k = 1; k <= 2; k++) {
                const v = Page.parseNumber(cells[k].value);
                const ok = isFinite(v) && Math.abs(v) <= 1e6;
                cells[k].classList.toggle('invalid', !ok);
                if (!ok && !bad)
                    bad =
                        cells[k].value.trim() === ''
                            ? `${name}'s x${k} is empty: type a number`
                            : isFinite(v)
                            ? `${name}'s x${k} = ${cells[k].value.trim()} is too large (at most 1e6 here)`
                            : `${name}'s x${k}: '${cells[k].value.trim()}' is not a number`;
                x.push(ok ? v : 0);
            }
        });
        return {names, x, bad};
    }

    /* weights (n, n) and out (n, d) from the library. */
    function compute(x, n, d) {
        const M = Page.library();
        const px = M._malloc(4 * n * d), pw = M._malloc(4 * n * n), po = M._malloc(4 * n * d), pe = M._malloc(256);
        try {
            M.HEAPF32.set(x, px >> 2);
            if (M._agw_seed(n, d, px, pw, po, pe, 256) !== 0) throw new Error(M.UTF8ToString(pe));
            const f = M.HEAPF32;
            return {
                weights: Array.from(f.subarray(pw >> 2, (pw >> 2) + n * n)),
                out: Array.from(f.subarray(po >> 2, (po >> 2) + n * d)),
            };
        } finally {
            [px, pw, po, pe].forEach((p) => M._free(p));
        }
    }

    function update() {
        const {names, x, bad} = read();
        Page.say('seed-msg', bad);
        if (bad) return;
        const n = names.length, d = 2;
        let r;
        try {
            r = compute(x, n, d);
        } catch (e) {
            Page.say('seed-msg', e.message);
            return;
        }
        const W = [], O = [];
        for (let i = 0; i < n; i++) {
            W.push(r.weights.slice(i * n, i * n + n));
            O.push(r.out.slice(i * d, i * d + d));
        }
        Draw.heatmap(Page.$('seed-weights'), {
            values: W,
            rowLabels: names,
            colLabels: names,
            decimals: 2,
            cell: 54,
            title: 'weights: row i is where word i looks',
        });
        const table = Page.$('seed-output');
        table.innerHTML = '';
        const head = table.insertRow();
        ['', 'output x1', 'output x2'].forEach((t) => {
            const th = document.createElement('th');
            th.textContent = t;
            head.appendChild(th);
        });
        O.forEach((o, i) => {
            const tr = table.insertRow();
            const th = document.createElement('th');
            th.textContent = names[i];
            tr.appendChild(th);
            o.forEach((v) => (tr.insertCell().textContent = Draw.fmt(v, 2)));
        });
        const points = [], arrows = [];
        names.forEach((nm, i) => points.push({x: x[2 * i], y: x[2 * i + 1], label: nm, color: COLORS[i]}));
        names.forEach((nm, i) => {
            points.push({x: O[i][0], y: O[i][1], label: nm + "'", hollow: true, color: COLORS[i]});
            arrows.push([i, n + i]);
        });
        Draw.plane(Page.$('seed-plane'), {points, arrows, size: 300});
    }

    return {build, update};
})();
