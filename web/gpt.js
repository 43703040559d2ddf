/*
 * gpt.js - section 4, a small GPT on your text: `attograd train --task
 * text` in the Worker (worker.js), its progress drawn while the page stays
 * responsive; `attograd sample` and `attograd attend` on its checkpoint; the
 * checkpoint downloaded (the command and PyTorch load it) or one the
 * command made loaded in its place.
 */
'use strict';

const Gpt = (function () {
    const CK = 'gpt.safetensors';
    const SHOW_BYTES = 256 << 10; /* the text box shows at most this much of a file */
    /* flags the page always gives: a short warmup and frequent estimates, for a short run */
    const RUN_FLAGS = ['--warmup', '20', '--eval-every', '50', '--eval-iters', '4'];

    let text = null; /* {bytes, name} */
    let ckpt = null; /* {bytes, name, meta, source} */
    let busy = false;
    let chart = null; /* {losses, train, val, from, to} */

    const $ = Page.$;

    function fileName(name) {
        return /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,60}$/.test(name) ? name : 'text.txt';
    }

    function setText(bytes, name, shown) {
        text = {bytes, name: fileName(name)};
        const box = $('gpt-text');
        if (shown !== undefined) {
            box.value = shown;
            box.readOnly = bytes.length > SHOW_BYTES;
        }
        const chars = shown !== undefined && bytes.length <= SHOW_BYTES ? [...shown].length : null;
        Page.say(
            'gpt-textinfo',
            `${text.name}: ${bytes.length.toLocaleString('en')} bytes` +
                (chars !== null ? `, ${chars.toLocaleString('en')} characters` : '') +
                (bytes.length > SHOW_BYTES ? ` (the box shows the first ${SHOW_BYTES >> 10} KB; the whole file trains)` : '')
        );
        showCommand();
    }

    async function takeFile(file) {
        Page.say('gpt-msg', '');
        try {
            const bytes = await Page.readFile(file, Page.MAX_TEXT_BYTES, 'texts');
            const bad = Page.utf8Error(bytes);
            if (bad >= 0)
                throw new Error(
                    `${file.name} is not UTF-8 text: byte ${bad} (0x${bytes[bad].toString(16).padStart(2, '0')}) ` +
                        'does not begin a character; save it as UTF-8 and try again'
                );
            if (bytes.length === 0) throw new Error(`${file.name} is empty`);
            const shown = new TextDecoder().decode(bytes.subarray(0, SHOW_BYTES));
            setText(bytes, file.name, shown);
        } catch (e) {
            Page.say('gpt-msg', e.message);
        }
    }

    async function usePlay() {
        const r = await fetch('mill.txt');
        const bytes = new Uint8Array(await r.arrayBuffer());
        setText(bytes, 'mill.txt', new TextDecoder().decode(bytes));
    }

    function settings() {
        const v = (id) => $(id).value.trim();
        return [
            '--layers', v('gpt-layers'), '--heads', v('gpt-heads'), '--dim', v('gpt-dim'),
            '--seq', v('gpt-seq'), '--steps', v('gpt-steps'), '--lr', v('gpt-lr'), '--seed', v('gpt-seed'),
        ];
    }

    function trainArgs(resume) {
        const name = text ? text.name : 'text.txt';
        return resume
            ? ['--text', name, '--load', CK, '--steps', $('gpt-steps').value.trim()].concat(RUN_FLAGS.slice(2))
            : ['--text', name].concat(settings(), RUN_FLAGS);
    }

    function showCommand() {
        Page.say('gpt-cmd', Page.commandLine(['train', '--task', 'text'].concat(trainArgs(false), ['--save', CK])));
    }

    function setBusy(b) {
        busy = b;
        $('gpt-train').disabled = b;
        $('gpt-continue').disabled = b || !ckpt || !ckpt.meta.step;
        $('gpt-stop').disabled = !b;
        $('gpt-sample').disabled = !ckpt;
        $('gpt-heads-btn').disabled = !ckpt;
        $('gpt-download').disabled = !ckpt;
    }

    function drawChart() {
        if (!chart) return;
        Draw.lines($('gpt-loss'), {
            width: 520,
            height: 250,
            xMax: chart.to,
            xLabel: 'step',
            yLabel: 'loss (nats per character)',
            series: [
                {points: chart.losses, color: '#9aa3b2', label: 'batch loss', width: 1},
                {points: chart.train, color: '#1f5fbf', label: 'training (estimate)', dots: true},
                {points: chart.val, color: '#c2410c', label: 'validation (estimate)', dots: true},
            ],
        });
    }

    function onProgress(e) {
        if (e.type === 'gpt-header') {
            Page.say('gpt-stats', e.header);
            return;
        }
        if (e.type !== 'gpt-progress') return;
        for (const p of e.losses) chart.losses.push(p);
        for (const [s, tr, va] of e.ests) {
            chart.train.push([s, tr]);
            chart.val.push([s, va]);
        }
        chart.to = Math.max(chart.to, e.step - e.done + e.total);
        $('gpt-bar').style.width = `${(100 * e.done) / e.total}%`;
        $('gpt-progress').setAttribute('aria-valuenow', String(Math.round((100 * e.done) / e.total)));
        const last = chart.val[chart.val.length - 1];
        const rate = e.seconds > 0 ? e.done / e.seconds : 0;
        Page.say(
            'gpt-stats',
            `step ${e.step} (${e.done} of ${e.total} in this run)   batch loss ` +
                `${chart.losses[chart.losses.length - 1][1].toFixed(4)}` +
                (last ? `   val_loss ${last[1].toFixed(4)} (estimate at step ${last[0]})` : '') +
                `   lr ${e.lr.toFixed(6)}   ${rate.toFixed(0)} steps/s`
        );
        drawChart();
    }

    async function train(resume) {
        if (busy) return;
        Page.say('gpt-msg', '');
        if (!text || text.bytes.length === 0) return Page.say('gpt-msg', 'there is no text: paste one, drop a file or use the play');
        if (resume && !(ckpt && ckpt.meta.step))
            return Page.say('gpt-msg', 'there is no training checkpoint to continue: train one, or load one made by attograd train --task text --save');
        const files = {[text.name]: text.bytes};
        if (resume) files[CK] = ckpt.bytes;
        if (!resume || !chart) chart = {losses: [], train: [], val: [], to: 1};
        setBusy(true);
        $('gpt-bar').style.width = '0';
        Page.say('gpt-result', '');
        Page.say('gpt-stats', 'starting...');
        try {
            const done = await Page.work({type: 'gpt-train', args: trainArgs(resume), files}, onProgress);
            const meta = Page.safetensors(done.checkpoint, CK).meta;
            ckpt = {bytes: done.checkpoint, name: CK, meta, source: 'trained on this page'};
            for (const [s, tr, va] of done.ests)
                if (!chart.train.length || chart.train[chart.train.length - 1][0] !== s) {
                    chart.train.push([s, tr]);
                    chart.val.push([s, va]);
                }
            drawChart();
            Page.say('gpt-result', `${done.result} seconds=${done.seconds.toFixed(2)} val_seconds=${done.valSeconds.toFixed(2)}` + (done.stopped ? '   (stopped)' : ''));
            $('gpt-bar').style.width = '100%';
            showCheckpoint();
        } catch (e) {
            const msg = Page.firstLine(e.message);
            Page.say(
                'gpt-msg',
                /out of memory/.test(msg)
                    ? `${msg} (the browser gives WebAssembly at most 2 GB: try a smaller model, or the attograd command)`
                    : msg
            );
            Page.say('gpt-stats', '');
        } finally {
            setBusy(false);
        }
    }

    function showCheckpoint() {
        if (!ckpt) return Page.say('gpt-ckinfo', 'no checkpoint yet: train one, or load one the command made');
        const m = ckpt.meta;
        const vocab = m.vocab !== undefined ? [...m.vocab].length : m.vocab_size;
        Page.say(
            'gpt-ckinfo',
            `${ckpt.name} (${ckpt.source}, ${Page.megabytes(ckpt.bytes.length)}): ` +
                `${m.n_layer} layers, ${m.n_head} heads, dim ${m.n_embd}, seq ${m.block_size}, ` +
                `${vocab} characters` +
                (m.step ? `, step ${m.step}` : ', a model without training state (sampling and heads only)')
        );
    }

    async function sample() {
        if (!ckpt) return;
        Page.say('gpt-smsg', '');
        const argv = ['sample', '--load', CK];
        const prompt = $('gpt-prompt').value;
        if (prompt !== '') argv.push('--prompt', prompt);
        argv.push('--tokens', $('gpt-tokens').value.trim(), '--temperature', $('gpt-temp').value.trim(), '--seed', $('gpt-sseed').value.trim());
        Page.say('gpt-scmd', Page.commandLine(argv));
        const out = $('gpt-out');
        out.textContent = '';
        $('gpt-sample').disabled = true;
        try {
            const r = await Page.runInWorker(argv, {[CK]: ckpt.bytes}, (stream, t) => {
                if (stream === 'stdout') out.textContent += t;
            });
            out.textContent = r.stdout;
            if (r.code !== 0) Page.say('gpt-smsg', Page.firstLine(r.stderr));
        } catch (e) {
            Page.say('gpt-smsg', e.message);
        } finally {
            $('gpt-sample').disabled = !ckpt;
        }
    }

    function charLabel(c) {
        return c === '\n' ? '\\n' : c === ' ' ? '_' : c;
    }

    /* attend's --out file drawn: a heatmap per layer and head, the prompt's
     * characters (from ids and the checkpoint's vocabulary) on the axes.
     * Returns a message when the file is not what attend writes, else ''. */
    function drawHeads(bytes, prompt, vocabText) {
        const view = $('gpt-heads-view');
        view.innerHTML = '';
        const st = Page.safetensors(bytes, 'attn.safetensors');
        const attn = st.tensors.attn;
        if (!attn || attn.shape.length !== 4 || attn.shape[2] !== attn.shape[3])
            return 'attn.safetensors has no attn of shape (n_layer, n_head, T, T)';
        const [L, H, T] = attn.shape;
        const a = Page.values(attn);
        const vocab = [...(vocabText || '')];
        const ids = st.tensors.ids ? Page.values(st.tensors.ids) : [];
        const labels =
            ids.length === T && vocab.length
                ? ids.map((i) => charLabel(vocab[i] !== undefined ? vocab[i] : '?'))
                : [...prompt].slice(-T).map(charLabel);
        const cell = Math.max(8, Math.min(26, Math.floor(300 / T)));
        for (let l = 0; l < L; l++)
            for (let h = 0; h < H; h++) {
                const fig = document.createElement('figure');
                const c = document.createElement('canvas');
                c.setAttribute('role', 'img');
                c.setAttribute('aria-label', `layer ${l}, head ${h}`);
                const values = [];
                for (let i = 0; i < T; i++) values.push(a.slice(((l * H + h) * T + i) * T, ((l * H + h) * T + i + 1) * T));
                Draw.heatmap(c, {values, rowLabels: labels, colLabels: cell >= 14 ? labels : [], decimals: null, cell});
                const cap = document.createElement('figcaption');
                cap.textContent = `layer ${l}, head ${h}`;
                fig.append(c, cap);
                view.appendChild(fig);
            }
        return '';
    }

    async function heads() {
        if (!ckpt) return;
        Page.say('gpt-hmsg', '');
        const prompt = $('gpt-hprompt').value;
        const argv = ['attend', '--load', CK, '--prompt', prompt, '--out', 'attn.safetensors'];
        Page.say('gpt-hcmd', Page.commandLine(argv));
        try {
            const r = await Page.runInWorker(argv, {[CK]: ckpt.bytes});
            if (r.code !== 0) {
                $('gpt-heads-view').innerHTML = '';
                if (/unknown command 'attend'/.test(r.stderr))
                    return Page.say(
                        'gpt-hmsg',
                        'this build of attograd has no attend command yet, which this view runs ' +
                            '(attograd attend --load CKPT --prompt TEXT --out FILE)'
                    );
                return Page.say('gpt-hmsg', Page.firstLine(r.stderr));
            }
            const f = r.files['attn.safetensors'];
            Page.say('gpt-hmsg', f ? drawHeads(f, prompt, ckpt.meta.vocab) : 'attograd attend wrote no attn.safetensors');
        } catch (e) {
            Page.say('gpt-hmsg', e.message);
        }
    }

    async function loadCheckpoint(file) {
        Page.say('gpt-ckmsg', '');
        try {
            const bytes = await Page.readFile(file, Page.MAX_CHECKPOINT_BYTES, 'checkpoints');
            const meta = Page.safetensors(bytes, file.name).meta;
            /* the command is the judge: it reads the whole file as it would any other */
            const r = await Page.runInWorker(['sample', '--load', CK, '--tokens', '0'], {[CK]: bytes});
            if (r.code !== 0) throw new Error(Page.firstLine(r.stderr).replace(CK, file.name));
            ckpt = {bytes, name: file.name, meta, source: 'loaded'};
            chart = null;
            showCheckpoint();
        } catch (e) {
            Page.say('gpt-ckmsg', e.message);
        } finally {
            setBusy(busy);
            $('gpt-load').value = '';
        }
    }

    function build() {
        const box = $('gpt-text');
        box.addEventListener('input', () => {
            if (box.readOnly) return;
            const bytes = new TextEncoder().encode(box.value);
            setText(bytes, text && text.name !== 'mill.txt' ? text.name : 'text.txt');
        });
        $('gpt-file').addEventListener('change', (e) => e.target.files[0] && takeFile(e.target.files[0]));
        $('gpt-play').addEventListener('click', () => usePlay().catch((e) => Page.say('gpt-msg', e.message)));
        const drop = $('gpt-drop');
        drop.addEventListener('dragover', (e) => {
            e.preventDefault();
            drop.classList.add('over');
        });
        drop.addEventListener('dragleave', () => drop.classList.remove('over'));
        drop.addEventListener('drop', (e) => {
            e.preventDefault();
            drop.classList.remove('over');
            if (e.dataTransfer.files[0]) takeFile(e.dataTransfer.files[0]);
        });
        $('gpt-train').addEventListener('click', () => train(false));
        $('gpt-continue').addEventListener('click', () => train(true));
        $('gpt-stop').addEventListener('click', () => Page.stopWork());
        $('gpt-sample').addEventListener('click', sample);
        $('gpt-heads-btn').addEventListener('click', heads);
        $('gpt-download').addEventListener('click', () => ckpt && Page.download(ckpt.bytes, ckpt.name.endsWith('.safetensors') ? ckpt.name : CK));
        $('gpt-load').addEventListener('change', (e) => e.target.files[0] && loadCheckpoint(e.target.files[0]));
        for (const id of ['gpt-layers', 'gpt-heads', 'gpt-dim', 'gpt-seq', 'gpt-steps', 'gpt-lr', 'gpt-seed'])
            $(id).addEventListener('input', showCommand);
        setBusy(false);
        showCheckpoint();
        usePlay().catch((e) => Page.say('gpt-msg', e.message));
    }

    return {build, drawHeads};
})();
