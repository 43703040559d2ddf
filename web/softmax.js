/*
 * softmax.js - section 2, backprop through softmax: `attograd explain
 * softmax --logits Z --upstream G`, run as you type, and its numbers drawn:
 * s, the Jacobian, dL/dz and the finite-difference check. The command's own
 * text is under the pictures.
 */
'use strict';

const Softmax = (function () {
    const NUM = /-?inf|nan|[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?/gi;
    let timer = 0, runs = 0;

    function numbers(s) {
        return (s.match(NUM) || []).map((t) => (/inf/i.test(t) ? (t[0] === '-' ? -Infinity : Infinity) : Number(t)));
    }

    /* explain softmax's stdout -> {vectors: {label: [..]}, J: [[..]], checks: [..]} */
    function parse(text) {
        const vectors = {}, J = [], checks = [];
        let inJ = false;
        for (const line of text.split('\n')) {
            let m;
            if (inJ && (m = /^\s+\[(.*?)\](\])?$/.exec(line))) {
                J.push(numbers(m[1]));
                if (m[2]) inJ = false;
            } else if ((m = /^ {2}J\s+\[\[(.*?)\](\])?$/.exec(line))) {
                J.push(numbers(m[1]));
                inJ = !m[2];
            } else if ((m = /^ {2}(\S.*?)\s+\[(.*)\]$/.exec(line))) {
                vectors[m[1]] = numbers(m[2]);
            } else if ((m = /dL\/dz_(\d+): finite difference (\S+), backward (\S+)\s+(.*)$/.exec(line))) {
                checks.push({j: +m[1], fd: numbers(m[2])[0], bw: numbers(m[3])[0], verdict: m[4].trim()});
            }
        }
        return {vectors, J, checks};
    }

    function argv() {
        const z = Page.listArg(Page.$('sm-logits').value), g = Page.listArg(Page.$('sm-upstream').value);
        const a = ['explain', 'softmax', '--logits', z];
        if (g) a.push('--upstream', g);
        return a;
    }

    async function update() {
        const a = argv(), mine = ++runs;
        Page.say('sm-cmd', Page.commandLine(a));
        const r = await attograd.run(a);
        if (mine !== runs) return; /* a newer one is on its way */
        Page.$('sm-text').textContent = r.stdout + r.stderr;
        const bad = r.code !== 0;
        Page.say('sm-msg', bad ? Page.firstLine(r.stderr) : '');
        Page.$('sm-logits').classList.toggle('invalid', bad && /--logits/.test(r.stderr));
        Page.$('sm-upstream').classList.toggle('invalid', bad && /--upstream/.test(r.stderr));
        Page.$('sm-pictures').style.opacity = bad ? 0.35 : 1;
        if (bad) return;
        const p = parse(r.stdout), v = p.vectors;
        const names = (v.z || []).map((_, j) => `z${j}`);
        Draw.bars(Page.$('sm-bars'), {
            names,
            decimals: 4,
            width: 500,
            rows: [
                {label: 'z', values: v.z, color: '#9aa3b2'},
                {label: 's', values: v.s, color: '#1f5fbf'},
                {label: 'g = dL/ds', values: v.g, color: '#c2410c'},
                {label: 'dL/dz', values: v['g^T J'], color: '#15803d'},
            ],
        });
        Draw.heatmap(Page.$('sm-jacobian'), {
            values: p.J,
            rowLabels: names.map((_, i) => `s${i}`),
            colLabels: names,
            decimals: 4,
            diverging: true,
            cell: Math.max(34, Math.min(62, Math.floor(380 / Math.max(1, names.length)))),
            title: 'Jacobian ds_i/dz_j = s_i (delta_ij - s_j)',
        });
        const t = Page.$('sm-checks');
        t.innerHTML = '<tr><th></th><th>finite difference</th><th>backward</th><th></th></tr>';
        for (const c of p.checks) {
            const tr = t.insertRow();
            tr.insertCell().textContent = `dL/dz_${c.j}`;
            tr.insertCell().textContent = Draw.fmt(c.fd, 4);
            tr.insertCell().textContent = Draw.fmt(c.bw, 4);
            const cell = tr.insertCell();
            cell.textContent = c.verdict;
            cell.className = c.verdict === 'agree' ? 'ok' : 'no';
        }
    }

    function build() {
        for (const id of ['sm-logits', 'sm-upstream'])
            Page.$(id).addEventListener('input', () => {
                clearTimeout(timer);
                timer = setTimeout(update, 120);
            });
    }

    return {build, update, parse};
})();
