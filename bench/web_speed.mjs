/*
 * web_speed.mjs - the browser build's speed against the native command's:
 * a lookup run (`train --task lookup --seed 7 --quiet`, its seconds=) and a
 * GPT training step (`bench gpt`, its us_per_step=), in headless Chromium
 * through attograd.run and natively, in rounds that alternate between
 * them so that both see the same load. Not a test (no timing is asserted):
 * docs/web.md reports what it prints.
 *
 *   make web && make PORTABLE=1 && make
 *   node bench/web_speed.mjs [ROUNDS]        # default 5
 *
 * Native builds: build/float-portable/attograd (plain C kernels, the ones
 * the browser runs) and build/float/attograd (the default, with the x86
 * SIMD kernels), each when built.
 */
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import {open} from '../tests/web/browser.mjs';

const ROUNDS = Number(process.argv[2] || 5);
const WEB = process.env.AG_WEB_DIR || 'build/web';
const NATIVES = {portable: 'build/float-portable/attograd', native: 'build/float/attograd'};

const JOBS = {
    lookup: {argv: ['train', '--task', 'lookup', '--seed', '7', '--quiet'], key: 'seconds', unit: 's'},
    'gpt-default': {argv: ['bench', 'gpt', '--steps', '10'], key: 'us_per_step', unit: 'us'},
    'gpt-page': {
        argv: ['bench', 'gpt', '--layers', '2', '--dim', '64', '--heads', '4', '--seq', '32', '--steps', '40'],
        key: 'us_per_step',
        unit: 'us',
    },
};

function field(out, key) {
    const m = new RegExp(`${key}=([0-9.]+)`).exec(out);
    if (!m) throw new Error(`no ${key}= in: ${out}`);
    return Number(m[1]);
}

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const b = await open(WEB);
try {
    await b.page.goto(b.base + '/index.html');
    await b.page.waitForSelector('body[data-ready="true"]');
    const where = ['browser'].concat(Object.keys(NATIVES).filter((k) => fs.existsSync(NATIVES[k])));
    const got = {};
    for (let r = 0; r < ROUNDS; r++)
        for (const [job, j] of Object.entries(JOBS))
            for (const w of where) {
                let out;
                if (w === 'browser') {
                    const res = await b.page.evaluate((a) => attograd.run(a), j.argv);
                    if (res.code !== 0) throw new Error(res.stderr);
                    out = res.stdout;
                } else {
                    const res = spawnSync(NATIVES[w], j.argv, {encoding: 'utf8'});
                    if (res.status !== 0) throw new Error(res.stderr);
                    out = res.stdout;
                }
                ((got[job] ||= {})[w] ||= []).push(field(out, j.key));
            }
    const cpu = (os.cpus()[0] || {}).model || 'unknown';
    console.log(`web-speed: cpu="${cpu}" cores=${os.cpus().length} load="${os.loadavg().map((x) => x.toFixed(2)).join(' ')}" rounds=${ROUNDS}`);
    for (const [job, j] of Object.entries(JOBS))
        for (const w of where) {
            const v = got[job][w];
            console.log(
                `web-speed: job=${job} where=${w} min=${Math.min(...v)}${j.unit} median=${median(v)}${j.unit}` +
                    (w !== 'browser' ? ` browser/${w}=${(Math.min(...got[job].browser) / Math.min(...v)).toFixed(2)}` : '')
            );
        }
} finally {
    await b.close();
}
