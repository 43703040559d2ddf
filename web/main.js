/*
 * main.js - the page starts: wait for attograd.wasm, then give each section
 * its controls and its first picture. A module that does not load is said
 * at the top of the page, never a silent blank.
 */
'use strict';

(async function () {
    const status = Page.$('status');
    const t0 = performance.now();
    try {
        await attograd.ready;
        Seed.build();
        Softmax.build();
        Tasks.build();
        Gpt.build();
        Console.build();
        Seed.update();
        await Softmax.update();
        Tasks.reset();
        const ms = performance.now() - t0;
        status.textContent = `ready: attograd.wasm loaded and started in ${ms.toFixed(0)} ms`;
        status.classList.add('ready');
        document.body.dataset.readyMs = performance.now().toFixed(0); /* since navigation began */
        document.body.dataset.ready = 'true';
    } catch (e) {
        status.textContent = `attograd could not start: ${e.message}`;
        status.classList.add('failed');
        document.body.dataset.ready = 'failed';
        throw e;
    }
})();
