/*
 * page.test.mjs - `make check-web`: the page in a real browser (Debian's
 * chromium, driven by playwright-core; no browser is downloaded), against
 * the native command on the same kernels (make PORTABLE=1's attograd).
 *
 *   AG_WEB_DIR   the built site (build/web)
 *   AG_NATIVE    the native command (build/float-portable/attograd)
 *   AG_WEB_OUT   where the screenshots go (build/web-test)
 *
 * It serves the site on 127.0.0.1 (python3's http.server, on a free port),
 * refuses and records any request elsewhere, and checks: no console error;
 * run() equals the native command byte for byte (demo; train and explain
 * apart from seconds=); usage errors exit 2 with the native message; each
 * section works when used (the seed's numbers, softmax's drawing, a toy
 * run stopped, resumed and ending on the command's result line, a GPT
 * trained in the Worker while the page answers, its sample and checkpoint
 * going to the native command and one of the command's coming back); bad
 * input gets a message. A screenshot of each section goes to AG_WEB_OUT.
 */
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {open} from './browser.mjs';

const WEB = path.resolve(process.env.AG_WEB_DIR || 'build/web');
const NATIVE = path.resolve(process.env.AG_NATIVE || 'build/float-portable/attograd');
const OUT = path.resolve(process.env.AG_WEB_OUT || 'build/web-test');
const MILL = path.resolve('examples/mill.txt');
const LONG = {timeout: 300000};

let browser, page, scratch;
const consoleErrors = [], consoleWarnings = [];

/* ---- helpers ---- */

/* The native command: {code, stdout, stderr}. */
function native(argv, cwd) {
    const r = spawnSync(NATIVE, argv, {cwd: cwd || scratch, encoding: 'utf8', maxBuffer: 64 << 20});
    if (r.error) throw r.error;
    return {code: r.status, stdout: r.stdout, stderr: r.stderr};
}

const noSeconds = (s) => s.replace(/ (val_)?seconds=[0-9.]+/g, ' $1seconds=S');

/* attograd.run in the page; files go in and come out as arrays of bytes. */
async function run(argv, files) {
    return page.evaluate(
        async ([a, f]) => {
            const given = {};
            for (const [k, v] of Object.entries(f || {})) given[k] = new Uint8Array(v);
            const r = await attograd.run(a, {files: given});
            const out = {};
            for (const [k, v] of Object.entries(r.files)) out[k] = Array.from(v);
            return {code: r.code, stdout: r.stdout, stderr: r.stderr, files: out};
        },
        [argv, files ? Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Array.from(v)])) : {}]
    );
}

async function shot(selector, name) {
    fs.mkdirSync(OUT, {recursive: true});
    await page.locator(selector).screenshot({path: path.join(OUT, name)});
}

const text = (sel) => page.locator(sel).textContent();
const canvasData = (sel) => page.evaluate((s) => document.querySelector(s).toDataURL(), sel);

/* ---- the server, the browser, the page ---- */

before(async () => {
    assert.ok(fs.existsSync(path.join(WEB, 'index.html')), `${WEB}/index.html: run make web first`);
    assert.ok(fs.existsSync(NATIVE), `${NATIVE}: run make PORTABLE=1 first`);
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ag-web-'));
    browser = await open(WEB);
    page = browser.page;
    page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
        if (m.type() === 'warning') consoleWarnings.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e.stack || e)));
    page.on('worker', (w) => w.on('console', (m) => m.type() === 'error' && consoleErrors.push('worker: ' + m.text())));
    const t0 = Date.now();
    await page.goto(browser.base + '/index.html');
    await page.waitForSelector('body[data-ready]');
    const ms = Date.now() - t0;
    assert.equal(await page.getAttribute('body', 'data-ready'), 'true', await text('#status'));
    const nav = await page.getAttribute('body', 'data-ready-ms');
    console.log(`# the page was usable ${nav} ms after its navigation began (${ms} ms after goto; ${await text('#status')})`);
});

after(async () => {
    if (browser) await browser.close();
    if (scratch) fs.rmSync(scratch, {recursive: true, force: true});
});

/* ---- the module and the run() contract ---- */

test('the wasm is at most 500 KB', () => {
    const raw = fs.statSync(path.join(WEB, 'attograd.wasm')).size;
    console.log(`# attograd.wasm: ${raw} bytes`);
    assert.ok(raw <= 500 * 1024, `attograd.wasm is ${raw} bytes`);
});

test('run(["demo"]) equals the native demo byte for byte', async () => {
    const r = await run(['demo']);
    assert.deepEqual(r, {...native(['demo']), files: {}});
});

test('run(train lookup --seed 7 --quiet) equals the native command apart from seconds=', LONG, async () => {
    const argv = ['train', '--task', 'lookup', '--seed', '7', '--quiet'];
    const r = await run(argv), n = native(argv);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(noSeconds(r.stdout), noSeconds(n.stdout));
    assert.equal(r.stderr, n.stderr);
    assert.match(r.stdout, /^result: task=lookup steps=600 loss=\S+ accuracy=\S+ seconds=[0-9.]+\n$/);
});

test('run(explain softmax --logits 1,2,3) equals the native command', async () => {
    const argv = ['explain', 'softmax', '--logits', '1,2,3'];
    assert.deepEqual(await run(argv), {...native(argv), files: {}});
});

test('run(["--bogus"]) exits 2 with the native message', async () => {
    const r = await run(['--bogus']), n = native(['--bogus']);
    assert.equal(r.code, 2);
    assert.equal(n.code, 2);
    assert.equal(r.stderr, n.stderr);
    assert.match(r.stderr, /^attograd: unknown command '--bogus'\n/);
    assert.equal(r.stdout, '');
});

test('usage and run-time errors have the native status and message', async () => {
    for (const argv of [
        ['train', '--steps', 'x'],
        ['explain', 'softmax', '--logits', '1,x'],
        ['sample', '--load', 'missing.safetensors'],
        ['train', '--task', 'text', '--text', 'missing.txt'],
    ]) {
        const r = await run(argv), n = native(argv);
        assert.deepEqual([r.code, r.stdout, r.stderr], [n.code, n.stdout, n.stderr], argv.join(' '));
        assert.notEqual(r.code, 0, argv.join(' '));
    }
});

test('--threads 2 falls back to one thread, with the same numbers', LONG, async () => {
    const a = await run(['train', '--task', 'lookup2', '--steps', '100', '--quiet', '--threads', '2']);
    const b = await run(['train', '--task', 'lookup2', '--steps', '100', '--quiet']);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(noSeconds(a.stdout), noSeconds(b.stdout));
});

test('files go in and come out: a checkpoint saved, resumed, equal to the native ones', LONG, async () => {
    const argv = ['train', '--task', 'reverse', '--steps', '40', '--seed', '3', '--save', 'ck.safetensors', '--quiet'];
    const r = await run(argv), n = native(argv);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(Object.keys(r.files), ['ck.safetensors']);
    const mine = Buffer.from(r.files['ck.safetensors']);
    assert.ok(mine.equals(fs.readFileSync(path.join(scratch, 'ck.safetensors'))), 'the checkpoints differ');
    assert.equal(noSeconds(r.stdout), noSeconds(n.stdout));
    /* the native checkpoint resumed in the page, and the other way round */
    const more = ['train', '--load', 'ck.safetensors', '--steps', '20', '--quiet'];
    const r2 = await run(more, {'ck.safetensors': mine});
    assert.equal(r2.code, 0, r2.stderr);
    assert.deepEqual(Object.keys(r2.files), [], 'a run that saves nothing returns no file');
    assert.equal(noSeconds(r2.stdout), noSeconds(native(more).stdout));
    /* each run starts with an empty file system */
    const r3 = await run(['train', '--load', 'ck.safetensors', '--steps', '1']);
    assert.equal(r3.code, 1);
    assert.match(r3.stderr, /ck\.safetensors/);
});

/* ---- the sections ---- */

test('section 1: the seed example shows the demo numbers and updates as you type', async () => {
    const demo = native(['demo']).stdout;
    const rows = await page.$$eval('#seed-output tr', (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((c) => c.textContent)));
    assert.match(demo, /output:\n\[\[0\.80 0\.60\]\n \[0\.60 0\.80\]\n \[0\.75 0\.75\]\]/);
    assert.deepEqual(rows, [
        ['0.80', '0.60'],
        ['0.60', '0.80'],
        ['0.75', '0.75'],
    ]);
    await shot('#seed', 'seed.png');
    const before = await canvasData('#seed-weights');
    await page.fill('#seed-2-1', '2');
    await page.waitForFunction(() => document.querySelector('#seed-output tr:nth-child(4) td').textContent !== '0.75');
    assert.notEqual(await canvasData('#seed-weights'), before);
    /* mat = [2, 1]: the library's numbers, against the formula in double precision */
    const out = await page.$$eval('#seed-output tr', (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((c) => +c.textContent)));
    const x = [[1, 0], [0, 1], [2, 1]];
    for (let i = 0; i < 3; i++) {
        const s = x.map((v) => (x[i][0] * v[0] + x[i][1] * v[1]) / Math.SQRT2);
        const m = Math.max(...s), e = s.map((v) => Math.exp(v - m)), z = e.reduce((a, b) => a + b);
        const o = [0, 1].map((k) => x.reduce((a, v, j) => a + (e[j] / z) * v[k], 0));
        assert.deepEqual(out[i], o.map((v) => +v.toFixed(2)), `row ${i}`);
    }
    await page.fill('#seed-1-2', 'abc');
    await page.waitForFunction(() => document.getElementById('seed-msg').textContent !== '');
    assert.equal(await text('#seed-msg'), "sat's x2: 'abc' is not a number");
    await page.click('#seed-reset');
    assert.equal(await text('#seed-msg'), '');
});

test('section 2: softmax backprop draws explain softmax and says what is wrong with bad numbers', async () => {
    const checks = await page.$$eval('#sm-checks tr', (trs) => trs.slice(1).map((tr) => [...tr.cells].map((c) => c.textContent)));
    assert.deepEqual(checks, [
        ['dL/dz_0', '0.0819', '0.0819', 'agree'],
        ['dL/dz_1', '-0.0220', '-0.0220', 'agree'],
        ['dL/dz_2', '-0.0599', '-0.0599', 'agree'],
    ]);
    assert.equal(await page.textContent('#sm-text'), native(['explain', 'softmax', '--logits', '1,2,3']).stdout);
    await shot('#softmax', 'softmax.png');
    const before = await canvasData('#sm-jacobian');
    await page.fill('#sm-logits', '0.5, -1, 2, -inf');
    await page.fill('#sm-upstream', '0, 1, 0, 0');
    const want = native(['explain', 'softmax', '--logits', '0.5,-1,2,-inf', '--upstream', '0,1,0,0']).stdout;
    await page.waitForFunction((w) => document.getElementById('sm-text').textContent === w, want);
    assert.notEqual(await canvasData('#sm-jacobian'), before);
    assert.equal(await page.locator('#sm-checks tr').count(), 5);
    await page.fill('#sm-logits', '1, 2, x');
    const bad = native(['explain', 'softmax', '--logits', '1,2,x', '--upstream', '0,1,0,0']).stderr.split('\n')[0];
    await page.waitForFunction((b) => document.getElementById('sm-msg').textContent === b, bad);
    assert.match(bad, /'x' is not a number/);
    await page.fill('#sm-logits', '1, 2, 3');
    await page.fill('#sm-upstream', '');
    await page.waitForFunction(() => document.getElementById('sm-msg').textContent === '');
});

/* Train the toy task chosen in the page to the end; its result line. */
async function trainToEnd() {
    await page.click('#tk-train');
    await page.waitForFunction(
        () => {
            const s = Tasks.state();
            return s.done === s.total && !s.running && s.result.startsWith('result:');
        },
        null,
        {timeout: 120000}
    );
    return text('#tk-result');
}

test('section 3: a toy run stops, resumes, and ends on the command\'s result line', LONG, async () => {
    await page.selectOption('#tk-task', 'lookup2-2');
    await page.fill('#tk-seed', '7');
    await page.fill('#tk-steps', '600');
    await page.dispatchEvent('#tk-steps', 'change');
    assert.equal(await text('#tk-cmd'), 'attograd train --task lookup2 --heads 2 --seed 7 --steps 600');
    const untrained = await canvasData('#tk-heads canvas:first-child');
    assert.equal(await page.locator('#tk-heads canvas').count(), 2);
    await page.click('#tk-train');
    /* Stop from inside the page, between two frames of training: a click sent
       from here lands some frames later, and on a fast core the 600 steps can
       all be done by then (the click would then start a new run). */
    await page.waitForFunction(() => {
        if (Tasks.state().done < 30) return false;
        document.getElementById('tk-train').click(); /* stop */
        return true;
    });
    const stopped = await page.evaluate(() => Tasks.state());
    assert.ok(stopped.done < stopped.total, `the run ended (${stopped.done} steps) before it could be stopped`);
    assert.equal(stopped.running, false);
    assert.equal(await text('#tk-train'), 'Resume');
    assert.notEqual(await canvasData('#tk-heads canvas:first-child'), untrained, 'the heatmap did not change');
    assert.match(stopped.result, new RegExp(`^result: task=lookup2 steps=${stopped.done} `));
    await page.waitForTimeout(200);
    assert.equal((await page.evaluate(() => Tasks.state())).done, stopped.done, 'a stopped run went on');
    const line = await trainToEnd(); /* resume */
    const n = native(['train', '--task', 'lookup2', '--heads', '2', '--seed', '7', '--steps', '600', '--quiet']);
    assert.equal(noSeconds(line + '\n'), noSeconds(n.stdout));
    assert.match(await text('#tk-accuracy'), /^held-out accuracy after 600 steps: /);
    await shot('#tasks', 'tasks.png');
});

test('section 3: every task gives the command\'s numbers for the same seed', LONG, async () => {
    const flags = {
        lookup: ['--task', 'lookup'],
        'lookup2-1': ['--task', 'lookup2', '--heads', '1'],
        reverse: ['--task', 'reverse'],
        'reverse-none': ['--task', 'reverse', '--posenc', 'none'],
    };
    for (const [preset, f] of Object.entries(flags)) {
        await page.selectOption('#tk-task', preset);
        await page.fill('#tk-seed', '11');
        await page.fill('#tk-steps', '250');
        await page.dispatchEvent('#tk-steps', 'change');
        const line = await trainToEnd();
        const n = native(['train'].concat(f, ['--seed', '11', '--steps', '250', '--quiet']));
        assert.equal(noSeconds(line + '\n'), noSeconds(n.stdout), preset);
    }
    /* a bad number gets the command's message */
    await page.fill('#tk-steps', '-3');
    await page.dispatchEvent('#tk-steps', 'change');
    const want = native(['train', '--task', 'reverse', '--posenc', 'none', '--seed', '11', '--steps', '-3']).stderr.split('\n')[0];
    assert.equal(await text('#tk-msg'), want);
    await page.fill('#tk-steps', '600');
    await page.selectOption('#tk-task', 'lookup');
    await page.dispatchEvent('#tk-steps', 'change');
    assert.equal(await text('#tk-msg'), '');
});

const GPT_FLAGS = ['--layers', '2', '--heads', '4', '--dim', '32', '--seq', '32', '--steps', '80', '--lr', '0.003', '--seed', '5'];
const GPT_RUN = ['--warmup', '20', '--eval-every', '50', '--eval-iters', '4'];

async function setGpt(flags) {
    for (let i = 0; i < flags.length; i += 2) await page.fill('#gpt-' + flags[i].slice(2), flags[i + 1]);
}

test('section 4: a GPT trains in the Worker while the page answers, and its checkpoint works natively', LONG, async () => {
    await page.waitForFunction(() => document.getElementById('gpt-textinfo').textContent.startsWith('mill.txt'));
    await setGpt(GPT_FLAGS);
    await page.click('#gpt-train');
    await page.waitForFunction(() => /^step \d+ \(/.test(document.getElementById('gpt-stats').textContent));
    /* the page answers while the Worker trains: the seed example recomputes */
    await page.fill('#seed-0-1', '3');
    await page.waitForFunction(() => document.querySelector('#seed-output tr:nth-child(2) td').textContent !== '0.80');
    const during = await text('#gpt-stats');
    await page.click('#seed-reset');
    await page.waitForFunction(() => document.getElementById('gpt-result').textContent.startsWith('result:'), null, {timeout: 240000});
    assert.match(during, /^step \d+ \(\d+ of 80 in this run\)/);
    const n = native(['train', '--task', 'text', '--text', MILL].concat(GPT_FLAGS, GPT_RUN, ['--save', 'native.safetensors', '--quiet']));
    assert.equal(n.code, 0, n.stderr);
    assert.equal(noSeconds(await text('#gpt-result')), noSeconds(n.stdout.trim()));
    assert.match(await text('#gpt-ckinfo'), /^gpt\.safetensors \(trained on this page, .*step 80$/);

    /* download it: the native command samples from it as the page does */
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#gpt-download')]);
    const mine = path.join(scratch, 'page.safetensors');
    await dl.saveAs(mine);
    assert.ok(fs.readFileSync(mine).equals(fs.readFileSync(path.join(scratch, 'native.safetensors'))), 'the page\'s checkpoint differs from the command\'s');
    await page.fill('#gpt-prompt', 'MARGERY:');
    await page.fill('#gpt-temp', '0.8');
    await page.fill('#gpt-tokens', '120');
    await page.fill('#gpt-sseed', '3');
    await page.click('#gpt-sample');
    const s = native(['sample', '--load', mine, '--prompt', 'MARGERY:', '--tokens', '120', '--temperature', '0.8', '--seed', '3']);
    assert.equal(s.code, 0, s.stderr);
    await page.waitForFunction((w) => document.getElementById('gpt-out').textContent === w, s.stdout);
    assert.ok(s.stdout.startsWith('MARGERY:') && s.stdout.length > 100);
    await shot('#gpt', 'gpt.png');

    /* PyTorch loads it too, when this machine has Debian's python3-torch */
    const torch = spawnSync('/usr/bin/python3', ['-c', 'import torch'], {stdio: 'ignore'}).status === 0;
    if (torch && fs.existsSync('build/float/attograd')) {
        const r = spawnSync('/usr/bin/python3', ['tests/interop/interop_torch.py', MILL, mine], {encoding: 'utf8'});
        assert.equal(r.status, 0, r.stdout + r.stderr);
        console.log('# ' + r.stdout.trim());
    } else {
        console.log('# PyTorch check skipped: no python3-torch (or no build/float/attograd)');
    }
});

test('section 4: Stop ends the GPT\'s run and saves it; Continue goes on as one run would', LONG, async () => {
    const flags = GPT_FLAGS.map((v, i) => (GPT_FLAGS[i - 1] === '--steps' ? '200' : v));
    await setGpt(flags);
    await page.click('#gpt-train');
    await page.waitForFunction(() => /^step \d+ \(/.test(document.getElementById('gpt-stats').textContent));
    await page.click('#gpt-stop');
    await page.waitForFunction(() => /\(stopped\)$/.test(document.getElementById('gpt-result').textContent), null, {timeout: 120000});
    const k = Number(/step (\d+)$/.exec(await text('#gpt-ckinfo'))[1]);
    assert.ok(k > 0 && k < 200, `stopped at step ${k}`);
    assert.match(await text('#gpt-result'), new RegExp(`^result: task=text steps=${k} `));
    await page.fill('#gpt-steps', String(200 - k));
    await page.click('#gpt-continue');
    await page.waitForFunction(() => /^result: task=text steps=200 /.test(document.getElementById('gpt-result').textContent), null, {timeout: 240000});
    const n = native(['train', '--task', 'text', '--text', MILL].concat(flags, GPT_RUN, ['--quiet']));
    assert.equal(noSeconds(await text('#gpt-result')), noSeconds(n.stdout.trim()));
});

test('section 4: a checkpoint the command made loads, samples and trains on', LONG, async () => {
    const ck = path.join(scratch, 'cmd.safetensors');
    const made = ['train', '--task', 'text', '--text', MILL, '--layers', '1', '--heads', '2', '--dim', '16', '--seq', '16', '--steps', '30', '--save', ck, '--quiet'];
    assert.equal(native(made).code, 0);
    await page.setInputFiles('#gpt-load', ck);
    await page.waitForFunction(() => document.getElementById('gpt-ckinfo').textContent.startsWith('cmd.safetensors (loaded'));
    assert.match(await text('#gpt-ckinfo'), /1 layers, 2 heads, dim 16, seq 16, .*step 30$/);
    await page.fill('#gpt-prompt', '');
    await page.click('#gpt-sample');
    const s = native(['sample', '--load', ck, '--tokens', '120', '--temperature', '0.8', '--seed', '3']);
    await page.waitForFunction((w) => document.getElementById('gpt-out').textContent === w, s.stdout);
    /* train it on: the command's own continuation */
    await page.fill('#gpt-steps', '20');
    await page.click('#gpt-continue');
    await page.waitForFunction(() => document.getElementById('gpt-result').textContent.startsWith('result:'), null, {timeout: 120000});
    const more = native(['train', '--task', 'text', '--text', MILL, '--load', ck, '--steps', '20', '--eval-every', '50', '--eval-iters', '4', '--quiet']);
    assert.equal(noSeconds(await text('#gpt-result')), noSeconds(more.stdout.trim()));
    assert.match(await text('#gpt-ckinfo'), /step 50$/);
});

/* A file as attend writes it: attn (L, H, T, T) float32, each row causal and
 * summing to 1, and ids (T) int64. */
function attendFile(L, H, ids) {
    const T = ids.length, n = L * H * T * T;
    const attn = new Float32Array(n);
    for (let k = 0; k < L * H; k++)
        for (let i = 0; i < T; i++)
            for (let j = 0; j <= i; j++) attn[(k * T + i) * T + j] = j === (k + i) % (i + 1) ? 0.6 + 0.4 / (i + 1) : 0.4 / (i + 1);
    const idBytes = new BigInt64Array(ids.map(BigInt));
    const head = JSON.stringify({
        attn: {dtype: 'F32', shape: [L, H, T, T], data_offsets: [0, 4 * n]},
        ids: {dtype: 'I64', shape: [T], data_offsets: [4 * n, 4 * n + 8 * T]},
    });
    const hb = Buffer.from(head), len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(hb.length));
    return Buffer.concat([len, hb, Buffer.from(attn.buffer), Buffer.from(idBytes.buffer)]);
}

test('section 4: the heads view draws attend\'s file, a heatmap per layer and head', async () => {
    /* the view on the contract of attend --out: attn (n_layer, n_head, T, T), ids (T) */
    const f = attendFile(2, 3, [5, 1, 7, 7, 0]);
    const msg = await page.evaluate(([b]) => Gpt.drawHeads(new Uint8Array(b), 'ignored', 'abcdefgh'), [Array.from(f)]);
    assert.equal(msg, '');
    assert.equal(await page.locator('#gpt-heads-view canvas').count(), 6);
    assert.deepEqual(await page.$$eval('#gpt-heads-view figcaption', (c) => c.map((x) => x.textContent)), [
        'layer 0, head 0', 'layer 0, head 1', 'layer 0, head 2', 'layer 1, head 0', 'layer 1, head 1', 'layer 1, head 2',
    ]);
    const noAttn = Buffer.concat([Buffer.from([2, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{}')]);
    const missing = await page.evaluate(([b]) => Gpt.drawHeads(new Uint8Array(b), 'x', 'ab'), [Array.from(noAttn)]);
    assert.match(missing, /has no attn of shape/);
    const junk = await page.evaluate(() => {
        try {
            return Gpt.drawHeads(new Uint8Array([1, 0, 0, 0, 0, 0, 0, 0, 32]), 'x', 'ab');
        } catch (e) {
            return e.message;
        }
    });
    assert.equal(junk, 'attn.safetensors: not a safetensors file (its header is not JSON)');
});

test('section 4: the heads of the GPT, through attograd attend', LONG, async () => {
    const has = native(['attend', '--help']).code === 0;
    await page.fill('#gpt-hprompt', 'The mill');
    await page.click('#gpt-heads-btn');
    if (!has) {
        await page.waitForFunction(() => document.getElementById('gpt-hmsg').textContent !== '');
        assert.match(await text('#gpt-hmsg'), /no attend command yet/);
        console.log('# attograd attend is not in this build: the heads view says so');
        return;
    }
    await page.waitForFunction(() => document.querySelectorAll('#gpt-heads-view canvas').length > 0);
    assert.equal(await text('#gpt-hmsg'), '');
    /* the checkpoint loaded last: 1 layer, 2 heads */
    assert.equal(await page.locator('#gpt-heads-view canvas').count(), 1 * 2);
    await shot('#gpt', 'gpt-heads.png');
});

test('section 4: bad input gets a clear message', LONG, async () => {
    await page.setInputFiles('#gpt-file', {name: 'latin1.txt', mimeType: 'text/plain', buffer: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])});
    await page.waitForFunction(() => document.getElementById('gpt-msg').textContent !== '');
    assert.equal(await text('#gpt-msg'), 'latin1.txt is not UTF-8 text: byte 3 (0xe9) does not begin a character; save it as UTF-8 and try again');
    await page.setInputFiles('#gpt-file', {name: 'huge.txt', mimeType: 'text/plain', buffer: Buffer.alloc(9 << 20, 0x61)});
    await page.waitForFunction(() => /^huge\.txt is 9\.0 MB/.test(document.getElementById('gpt-msg').textContent));
    assert.match(await text('#gpt-msg'), /the page takes texts up to 8\.0 MB/);
    await page.setInputFiles('#gpt-load', {name: 'junk.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('not a checkpoint at all')});
    await page.waitForFunction(() => document.getElementById('gpt-ckmsg').textContent !== '');
    assert.match(await text('#gpt-ckmsg'), /^junk\.safetensors: /);
    /* settings the command refuses: its own message */
    await page.click('#gpt-play');
    await page.waitForFunction(() => document.getElementById('gpt-textinfo').textContent.startsWith('mill.txt'));
    await page.fill('#gpt-heads', '3');
    await page.click('#gpt-train');
    await page.waitForFunction(() => document.getElementById('gpt-msg').textContent !== '');
    assert.equal(await text('#gpt-msg'), 'attograd train: --heads: 3 does not divide --dim 32');
    await page.fill('#gpt-heads', '4');
    await page.fill('#gpt-lr', 'fast');
    await page.click('#gpt-train');
    await page.waitForFunction(() => /--lr/.test(document.getElementById('gpt-msg').textContent));
    assert.match(await text('#gpt-msg'), /^attograd train: --lr: 'fast' is not a number/);
    await page.fill('#gpt-lr', '0.003');
    /* a model beyond the browser's memory: the library's message, and what to do */
    await setGpt(['--layers', '64', '--dim', '1024', '--seq', '8']);
    await page.click('#gpt-train');
    await page.waitForFunction(() => /out of memory/.test(document.getElementById('gpt-msg').textContent), null, {timeout: 120000});
    assert.equal(
        await text('#gpt-msg'),
        'attograd train: gpt: out of memory for weights of dim 1024 (the browser gives WebAssembly at most 2 GB: try a smaller model, or the attograd command)'
    );
    await setGpt(GPT_FLAGS);
    /* a text too short for the windows: the command's message */
    await page.fill('#gpt-text', 'too short');
    await page.click('#gpt-train');
    await page.waitForFunction(() => /too short/.test(document.getElementById('gpt-msg').textContent));
    assert.match(await text('#gpt-msg'), /^attograd train: text\.txt: a text of 9 characters is too short/);
    await page.click('#gpt-play');
});

test('section 5: the command line runs as in a terminal', LONG, async () => {
    await page.fill('#cn-line', 'attograd demo --decimals 4');
    await page.click('#cn-run');
    await page.waitForFunction(() => /^exit status/.test(document.getElementById('cn-code').textContent));
    assert.equal(await text('#cn-out'), native(['demo', '--decimals', '4']).stdout);
    assert.match(await text('#cn-code'), /^exit status 0/);
    await page.fill('#cn-line', "attograd explain softmax --logits '1,2'");
    await page.click('#cn-run');
    await page.waitForFunction(() => /^exit status/.test(document.getElementById('cn-code').textContent) && document.getElementById('cn-out').textContent.includes('Forward'));
    assert.equal(await text('#cn-out'), native(['explain', 'softmax', '--logits', '1,2']).stdout);
    await page.fill('#cn-line', 'attograd gradcheck --frobnicate');
    await page.click('#cn-run');
    await page.waitForFunction(() => /^exit status 2/.test(document.getElementById('cn-code').textContent));
    await shot('#console', 'console.png');
});

test('the whole page: a screenshot, no console error, no request outside the local server', async () => {
    fs.mkdirSync(OUT, {recursive: true});
    await page.screenshot({path: path.join(OUT, 'page.png'), fullPage: true});
    await page.locator('body').evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({path: path.join(OUT, 'top.png')});
    for (const w of consoleWarnings) console.log(`# console warning: ${w}`);
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(browser.outside, []);
});
