/*
 * console.js - section 5, the command itself: any `attograd` command line,
 * run in the Worker as attograd.run runs it, its output and exit status shown.
 */
'use strict';

const Console = (function () {
    async function go() {
        const line = Page.$('cn-line').value;
        const out = Page.$('cn-out');
        let argv;
        try {
            argv = Page.splitArgs(line.replace(/^\s*attograd(\s+|$)/, ''));
        } catch (e) {
            out.textContent = `the command line has an ${e.message}`;
            return;
        }
        out.textContent = '';
        Page.say('cn-code', 'running...');
        Page.$('cn-run').disabled = true;
        const t0 = performance.now();
        try {
            const r = await Page.runInWorker(argv, {}, (stream, text) => (out.textContent += text));
            out.textContent = r.stdout + r.stderr;
            const names = Object.keys(r.files);
            Page.say(
                'cn-code',
                `exit status ${r.code}, ${((performance.now() - t0) / 1000).toFixed(2)} s` +
                    (names.length ? `; wrote ${names.join(', ')} (in the page's memory)` : '')
            );
        } catch (e) {
            Page.say('cn-code', e.message);
        } finally {
            Page.$('cn-run').disabled = false;
        }
    }

    function build() {
        Page.$('cn-run').addEventListener('click', go);
        Page.$('cn-line').addEventListener('keydown', (e) => {
            if (e.key === 'Enter') go();
        });
        for (const b of document.querySelectorAll('[data-cmd]'))
            b.addEventListener('click', () => {
                Page.$('cn-line').value = b.dataset.cmd;
                go();
            });
    }

    return {build};
})();
