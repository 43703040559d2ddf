/*
 * worker.js - the page's Worker: runs the attograd command, and trains the
 * GPT a few steps at a time (web/glue.c's agw_gpt_*), off the page's thread
 * so that the page stays responsive. Messages in (each with an id):
 *
 *   {type: 'run', argv, files}      the command, as attograd.run; posts
 *                                   {type: 'line', stream, text} per line
 *                                   printed, then {type: 'result', result}
 *   {type: 'gpt-train', args, files} `attograd train --task text` with these
 *                                   flags, in slices of ~100 ms; posts
 *                                   'gpt-header', 'gpt-progress' after each
 *                                   slice, then {type: 'gpt-done', result,
 *                                   stopped, checkpoint} (the --save file)
 *   {type: 'stop'}                  the training stops after its slice
 *                                   and still saves, as Ctrl-C does
 *
 * A failure posts {type: 'error', message}: the command's own words.
 */
'use strict';
importScripts('attograd.js');

let stopRequested = false;
const SLICE_MS = 100;
const CHECKPOINT = 'gpt.safetensors';

function post(m, transfer) {
    self.postMessage(m, transfer || []);
}

function runCommand(m) {
    const result = attograd.runSync(m.argv, {
        files: m.files,
        onStdout: (text) => post({id: m.id, type: 'line', stream: 'stdout', text}),
        onStderr: (text) => post({id: m.id, type: 'line', stream: 'stderr', text}),
    });
    const transfer = Object.values(result.files).map((b) => b.buffer);
    post({id: m.id, type: 'result', result}, transfer);
}

function failure(M, fallback) {
    const text = M.takeStderr().trim();
    return new Error(text || fallback);
}

async function gptTrain(m) {
    const M = attograd.library();
    for (const [name, bytes] of Object.entries(m.files || {})) M.FS.writeFile(name, bytes);
    const args = cString(M, m.args.join('\n'));
    const h = M._agw_gpt_new(args);
    M._free(args);
    if (!h) throw failure(M, 'the run could not start');
    try {
        post({id: m.id, type: 'gpt-header', header: M.UTF8ToString(M._agw_gpt_header(h))});
        stopRequested = false;
        let ms = 0;
        while (M._agw_gpt_done(h) < M._agw_gpt_total(h) && !stopRequested) {
            const t0 = performance.now(), losses = [];
            let estStep = M._agw_gpt_est_step(h);
            const ests = [];
            while (performance.now() - t0 < SLICE_MS && M._agw_gpt_done(h) < M._agw_gpt_total(h)) {
                if (M._agw_gpt_steps(h, 1) < 0) throw failure(M, 'a step failed');
                losses.push([M._agw_gpt_step(h), M._agw_gpt_loss(h)]);
                if (M._agw_gpt_est_step(h) !== estStep) {
                    estStep = M._agw_gpt_est_step(h);
                    ests.push([estStep, M._agw_gpt_train_est(h), M._agw_gpt_val_est(h)]);
                }
            }
            ms += performance.now() - t0;
            post({
                id: m.id,
                type: 'gpt-progress',
                step: M._agw_gpt_step(h),
                done: M._agw_gpt_done(h),
                total: M._agw_gpt_total(h),
                lr: M._agw_gpt_lr(h),
                losses,
                ests,
                seconds: ms / 1000,
            });
            await new Promise((r) => setTimeout(r, 0)); /* a 'stop' can come in now */
        }
        const t0 = performance.now();
        if (M._agw_gpt_finish(h) !== 0) throw failure(M, 'the validation loss failed');
        const valSeconds = (performance.now() - t0) / 1000;
        const ests = [[M._agw_gpt_est_step(h), M._agw_gpt_train_est(h), M._agw_gpt_val_est(h)]];
        const path = cString(M, CHECKPOINT);
        const saved = M._agw_gpt_save(h, path);
        M._free(path);
        if (saved !== 0) throw failure(M, 'the checkpoint could not be saved');
        const checkpoint = M.FS.readFile(CHECKPOINT);
        const result = M.UTF8ToString(M._agw_gpt_result(h));
        post(
            {
                id: m.id,
                type: 'gpt-done',
                result,
                seconds: ms / 1000,
                valSeconds,
                stopped: stopRequested,
                step: M._agw_gpt_step(h),
                ests,
                checkpoint,
            },
            [checkpoint.buffer]
        );
    } finally {
        M._agw_gpt_free(h);
    }
}

function cString(M, s) {
    const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
    M.stringToUTF8(s, p, n);
    return p;
}

self.onmessage = async (e) => {
    const m = e.data;
    if (m.type === 'stop') {
        stopRequested = true;
        return;
    }
    try {
        await attograd.ready;
        if (m.type === 'run') runCommand(m);
        else if (m.type === 'gpt-train') await gptTrain(m);
        else throw new Error(`unknown request '${m.type}'`);
    } catch (err) {
        post({id: m.id, type: 'error', message: err && err.message ? err.message : String(err)});
    }
};
