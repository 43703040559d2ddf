/*
 * tasks.js - section 3, the toy tasks trained live: the command's own run
 * (agw_train_* in web/glue.c: `attograd train`'s parser, trainer and
 * evaluation schedule), stepped a few milliseconds per frame so that the
 * loss curve and one held-out example's attention are drawn while it
 * learns. Stop and resume at any step; the result line at the end is the
 * command's for the same flags (its seconds are the page's).
 */
'use strict';

const Tasks = (function () {
    const PRESETS = {
        lookup: {flags: ['--task', 'lookup'], about: 'Find the value stored under the query key'},
        'lookup2-2': {
            flags: ['--task', 'lookup2', '--heads', '2'],
            about: 'The query names two keys: two heads can each fetch one',
        },
        'lookup2-1': {
            flags: ['--task', 'lookup2', '--heads', '1'],
            about: 'The same with one head, which must split its attention',
        },
        reverse: {flags: ['--task', 'reverse'], about: 'Position i answers the symbol at position T-1-i'},
        'reverse-none': {
            flags: ['--task', 'reverse', '--posenc', 'none'],
            about: 'Without positions, attention cannot tell where a token is',
        },
    };
    const FRAME_MS = 12;

    let run = null; /* {h, flags, losses, accs, ms, evalEvery} */
    let running = false;

    const M = () => Page.library();

    function flags() {
        const preset = PRESETS[Page.$('tk-task').value];
        const f = preset.flags.slice();
        const seed = Page.$('tk-seed').value.trim(), steps = Page.$('tk-steps').value.trim();
        f.push('--seed', seed, '--steps', steps);
        return f;
    }

    function showCommand() {
        Page.say('tk-cmd', Page.commandLine(['train'].concat(flags())));
        Page.say('tk-about', PRESETS[Page.$('tk-task').value].about);
    }

    function release() {
        if (run) M()._agw_train_free(run.h);
        run = null;
    }

    /* A fresh run for the flags, or null after showing the command's message. */
    function start() {
        release();
        const f = flags(), lib = M();
        lib.takeStderr();
        const p = Page.cString(lib, f.join('\n'));
        const h = lib._agw_train_new(p);
        lib._free(p);
        if (!h) {
            Page.say('tk-msg', Page.firstLine(lib.takeStderr()) || 'the run could not start');
            return null;
        }
        Page.say('tk-msg', '');
        const total = lib._agw_train_total(h);
        /* the held-out accuracy is measured where the command measures it (--eval-every) */
        const evalEvery = lib._agw_train_eval_every(h);
        run = {h, flags: f, losses: [], accs: [[0, lib._agw_train_accuracy(h)]], ms: 0, total, evalEvery};
        Page.say('tk-result', '');
        Page.say('tk-accuracy', '');
        draw();
        return run;
    }

    function setButtons() {
        const b = Page.$('tk-train');
        b.textContent = running ? 'Stop' : run && lib_done() > 0 && lib_done() < run.total ? 'Resume' : 'Train';
        Page.$('tk-reset').disabled = running;
    }

    function lib_done() {
        return run ? M()._agw_train_done(run.h) : 0;
    }

    function frame() {
        if (!running || !run) return;
        const lib = M(), h = run.h;
        const t0 = performance.now();
        let failed = false;
        while (performance.now() - t0 < FRAME_MS && lib._agw_train_done(h) < run.total) {
            if (lib._agw_train_steps(h, 1) < 0) {
                failed = true;
                break;
            }
            const d = lib._agw_train_done(h);
            run.losses.push([d, lib._agw_train_loss(h)]);
            if (d % run.evalEvery === 0 || d === run.total) run.accs.push([d, lib._agw_train_accuracy(h)]);
        }
        run.ms += performance.now() - t0;
        if (failed) {
            Page.say('tk-msg', Page.firstLine(lib.takeStderr()));
            running = false;
            setButtons();
            return;
        }
        draw();
        if (lib._agw_train_done(h) >= run.total) {
            running = false;
            finish();
            setButtons();
            return;
        }
        requestAnimationFrame(frame);
    }

    /* The held-out accuracy and the command's result line. */
    function finish() {
        const lib = M(), h = run.h;
        const d = lib._agw_train_done(h);
        if (d % run.evalEvery !== 0 && d !== run.total) {
            /* stopped between two evaluations: the command evaluates once more */
            if (lib._agw_train_evaluate(h) !== 0) return Page.say('tk-msg', Page.firstLine(lib.takeStderr()));
        }
        const line = lib.UTF8ToString(lib._agw_train_result(h)) + ` seconds=${(run.ms / 1000).toFixed(2)}`;
        Page.say('tk-result', line);
        const acc = lib._agw_train_accuracy(h);
        Page.say(
            'tk-accuracy',
            `held-out accuracy after ${d} steps: ${(100 * acc).toFixed(1)}% of 512 examples ` +
                `(loss ${lib._agw_train_eval_loss(h).toFixed(4)})`
        );
    }

    function draw() {
        const lib = M(), h = run.h;
        const d = lib._agw_train_done(h);
        Draw.lines(Page.$('tk-loss'), {
            width: 460,
            height: 250,
            logY: true,
            xMax: run.total,
            xLabel: 'step',
            yLabel: 'loss',
            right: {min: 0, max: 1},
            series: [
                {points: run.losses, color: '#1f5fbf', label: 'batch loss', width: 1.2},
                {points: run.accs, color: '#15803d', label: 'held-out accuracy', axis: 'right', dots: true},
            ],
        });
        const attn = lib._agw_train_example(h);
        if (!attn) return Page.say('tk-msg', Page.firstLine(lib.takeStderr()));
        const H = lib._agw_train_heads(h), T = lib._agw_train_seq(h), A = lib._agw_train_answers(h);
        const labels = [];
        for (let t = 0; t < T; t++) labels.push(lib.UTF8ToString(lib._agw_train_token(h, t)));
        const right = [];
        for (let t = 0; t < T; t++) {
            const got = [], want = [];
            for (let a = 0; a < A; a++) {
                const w = lib._agw_train_want(h, t, a);
                if (w < 0) continue;
                want.push(lib.UTF8ToString(lib._agw_train_class(h, w)));
                got.push(lib.UTF8ToString(lib._agw_train_class(h, lib._agw_train_answer(h, t, a))));
            }
            const good = got.join() === want.join();
            right.push(want.length ? {text: `-> ${got.join(',')}` + (good ? ' ok' : ` (want ${want.join(',')})`), good} : null);
        }
        const box = Page.$('tk-heads');
        while (box.children.length > H) box.lastChild.remove();
        while (box.children.length < H) {
            const c = document.createElement('canvas');
            c.setAttribute('role', 'img');
            box.appendChild(c);
        }
        const f = lib.HEAPF32, base = attn >> 2;
        for (let k = 0; k < H; k++) {
            const values = [];
            for (let i = 0; i < T; i++) values.push(Array.from(f.subarray(base + (k * T + i) * T, base + (k * T + i + 1) * T)));
            const c = box.children[k];
            c.setAttribute('aria-label', `attention of head ${k + 1}`);
            Draw.heatmap(c, {
                values,
                rowLabels: labels,
                colLabels: labels,
                decimals: 2,
                cell: 44,
                right: k === H - 1 ? right : null,
                title: `head ${k + 1} of ${H}: row = a position, columns = where it looks`,
            });
        }
        const last = run.accs[run.accs.length - 1];
        Page.say(
            'tk-status',
            `step ${d} of ${run.total}   batch loss ${d ? lib._agw_train_loss(h).toFixed(4) : '-'}   ` +
                `held-out accuracy ${last[1].toFixed(3)} (at step ${last[0]})`
        );
    }

    function toggle() {
        if (running) {
            running = false;
            if (run) finish();
        } else {
            if (!run || lib_done() >= run.total) {
                if (!start()) return setButtons();
            }
            running = true;
            Page.say('tk-result', '');
            Page.say('tk-accuracy', '');
            requestAnimationFrame(frame);
        }
        setButtons();
    }

    function reset() {
        running = false;
        release();
        if (start()) Page.say('tk-status', 'step 0: untrained weights; press Train');
        setButtons();
    }

    function build() {
        Page.$('tk-train').addEventListener('click', toggle);
        Page.$('tk-reset').addEventListener('click', reset);
        for (const id of ['tk-task', 'tk-seed', 'tk-steps'])
            Page.$(id).addEventListener('change', () => {
                showCommand();
                if (!running) reset();
            });
        showCommand();
    }

    /* For the tests: the run's numbers now. */
    function state() {
        if (!run) return null;
        const lib = M();
        return {
            done: lib._agw_train_done(run.h),
            total: run.total,
            running,
            result: Page.$('tk-result').textContent,
        };
    }

    return {build, reset, state};
})();
