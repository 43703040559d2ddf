/*
 * browser.mjs - the built site served on 127.0.0.1 and Debian's chromium
 * opened on it, for the page's tests (page.test.mjs) and its speed
 * measurement (bench/web_speed.mjs). playwright-core drives the browser at
 * /usr/bin/chromium (AG_CHROMIUM): no browser is downloaded. The flags keep
 * Chromium off the network (this machine's is closed), and each launch
 * gets a fresh profile. Requests that leave the local server are refused
 * and recorded.
 */
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {chromium} from 'playwright-core';

export const CHROMIUM = process.env.AG_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
];

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.unref();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const {port} = s.address();
            s.close(() => resolve(port));
        });
    });
}

async function waitForServer(url) {
    for (let i = 0; i < 100; i++) {
        try {
            const r = await fetch(url);
            if (r.ok) return;
        } catch (e) {
            /* not up yet */
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the server at ${url} did not answer`);
}

/*
 * Serve dir (python3's http.server, as make serve does, on a free port) and
 * open its index.html. Returns {base, context, page, outside, close}:
 * outside lists every refused request; close() ends the browser and the
 * server and removes the profile.
 */
export async function open(dir) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = spawn('python3', ['-m', 'http.server', '--bind', '127.0.0.1', '--directory', dir, String(port)], {
        stdio: 'ignore',
    });
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ag-chromium-'));
    let context = null;
    const close = async () => {
        if (context) await context.close();
        server.kill();
        fs.rmSync(profile, {recursive: true, force: true});
    };
    try {
        await waitForServer(base + '/index.html');
        context = await chromium.launchPersistentContext(profile, {
            executablePath: CHROMIUM,
            headless: true,
            args: CHROMIUM_ARGS,
            viewport: {width: 1200, height: 900},
            acceptDownloads: true,
        });
        const outside = [];
        await context.route('**/*', (route) => {
            const u = route.request().url();
            if (u.startsWith(base + '/') || u.startsWith('blob:') || u.startsWith('data:')) return route.continue();
            outside.push(u);
            return route.abort();
        });
        const page = context.pages()[0] || (await context.newPage());
        return {base, context, page, outside, close};
    } catch (e) {
        await close();
        throw e;
    }
}
