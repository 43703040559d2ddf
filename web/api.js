/*
 * api.js - window.attograd: the attograd command in the browser. Appended to
 * emscripten's loader (attogradModule) as attograd.js by `make web`; works
 * on a page (window.attograd) and in a Worker (self.attograd).
 *
 *   await attograd.ready;
 *   const r = await attograd.run(["train", "--task", "lookup", "--seed", "7"],
 *                                {files: {"ck.safetensors": bytes}});
 *   // r.code: the exit status; r.stdout, r.stderr: what it printed (text);
 *   // r.files: {name: Uint8Array} for every file the run wrote or changed
 *
 * Each run gets a module instance of its own (the compiled module is kept),
 * so a run starts as the command starts: fresh memory, a fresh virtual file
 * system holding only the files given (in the working directory, /work),
 * nothing left over from the run before. runSync does the same without a
 * promise (for a Worker, where blocking is fine); library() gives a live
 * instance for calling the library's exports (web/glue.c) directly.
 */
(function (global) {
    'use strict';
    const factory = attogradModule; /* emscripten's, just above */
    const here =
        typeof document !== 'undefined' && document.currentScript
            ? document.currentScript.src
            : global.location.href;
    const wasmUrl = new URL('attograd.wasm', here).href;
    const WORKDIR = '/work';
    let compiled = null;

    /* Bytes from a Uint8Array, an ArrayBuffer, a typed array or a string (UTF-8). */
    function toBytes(name, v) {
        if (v instanceof Uint8Array) return v;
        if (v instanceof ArrayBuffer) return new Uint8Array(v);
        if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
        if (typeof v === 'string') return new TextEncoder().encode(v);
        throw new TypeError(`attograd.run: files['${name}'] is not bytes or a string`);
    }

    /* Collects what a stream prints, byte by byte; calls back with each line
     * (a chunk ending in a newline) as it is printed, when asked to. */
    function sink(onText) {
        const bytes = [];
        let lineStart = 0;
        const decoder = new TextDecoder();
        return {
            put(b) {
                bytes.push(b < 0 ? b + 256 : b);
                if (onText && b === 10) {
                    onText(decoder.decode(new Uint8Array(bytes.slice(lineStart))));
                    lineStart = bytes.length;
                }
            },
            flush() {
                if (onText && lineStart < bytes.length) {
                    onText(decoder.decode(new Uint8Array(bytes.slice(lineStart))));
                    lineStart = bytes.length;
                }
            },
            text() {
                return new TextDecoder().decode(new Uint8Array(bytes));
            },
        };
    }

    /* A new instance of the compiled module, its standard output and error
     * going to out and err (sinks), its working directory /work. */
    function instantiate(out, err) {
        if (!compiled) throw new Error('attograd is not loaded yet: await attograd.ready first');
        const M = {
            noInitialRun: true,
            thisProgram: 'attograd',
            instantiateWasm(imports, done) {
                const inst = new WebAssembly.Instance(compiled, imports);
                done(inst, compiled);
                return inst.exports;
            },
            print() {},
            printErr() {},
            preRun: [
                function (mod) {
                    mod.FS.init(null, (b) => out.put(b), (b) => err.put(b));
                },
            ],
        };
        factory(M); /* synchronous: the module is compiled and instantiateWasm is */
        if (!M.callMain) throw new Error('attograd: the module did not start');
        M.FS.mkdir(WORKDIR);
        M.FS.chdir(WORKDIR);
        return M;
    }

    function mkdirs(FS, path) {
        const parts = path.split('/').slice(0, -1);
        let at = WORKDIR;
        for (const p of parts) {
            at += '/' + p;
            if (!FS.analyzePath(at).exists) FS.mkdir(at);
        }
    }

    function sameBytes(a, b) {
        if (a.length !== b.length) return false;
        for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
        return true;
    }

    /* Every regular file under dir (names relative to /work) that is not
     * one of the inputs as it was given. */
    function written(FS, dir, prefix, inputs, found) {
        for (const name of FS.readdir(dir)) {
            if (name === '.' || name === '..') continue;
            const path = dir + '/' + name, rel = prefix + name;
            const st = FS.stat(path);
            if (FS.isDir(st.mode)) {
                written(FS, path, rel + '/', inputs, found);
            } else if (FS.isFile(st.mode)) {
                const bytes = FS.readFile(path);
                if (!(rel in inputs) || !sameBytes(inputs[rel], bytes)) found[rel] = bytes;
            }
        }
        return found;
    }

    function checkArgv(argv) {
        if (!Array.isArray(argv)) throw new TypeError('attograd.run: argv must be an array');
        return argv.map((a) => {
            if (typeof a !== 'string' && typeof a !== 'number')
                throw new TypeError('attograd.run: every argument must be a string');
            return String(a);
        });
    }

    /* The command, run to its end: {code, stdout, stderr, files}. options:
     * files {name: bytes}, onStdout(text) and onStderr(text) called with
     * each line as it is printed. */
    function runSync(argv, options) {
        const opts = options || {};
        const args = checkArgv(argv);
        const inputs = {};
        for (const [name, v] of Object.entries(opts.files || {})) {
            if (!name || name.startsWith('/') || name.split('/').includes('..'))
                throw new TypeError(`attograd.run: '${name}' is not a name inside the working directory`);
            inputs[name] = toBytes(name, v);
        }
        const out = sink(opts.onStdout), err = sink(opts.onStderr);
        const M = instantiate(out, err);
        for (const [name, bytes] of Object.entries(inputs)) {
            mkdirs(M.FS, name);
            M.FS.writeFile(WORKDIR + '/' + name, bytes);
        }
        let code;
        try {
            code = M.callMain(args);
        } catch (e) {
            /* a trap (a bug, or memory exhausted beyond what malloc can report) */
            code = 1;
            const msg = `attograd: the run stopped: ${e && e.message ? e.message : e}\n`;
            for (const b of new TextEncoder().encode(msg)) err.put(b);
        }
        out.flush();
        err.flush();
        let files = {};
        try {
            files = written(M.FS, WORKDIR, '', inputs, {});
        } catch (e) {
            /* the file system of a module that trapped may be unreadable */
        }
        return {code, stdout: out.text(), stderr: err.text(), files};
    }

    async function run(argv, options) {
        await api.ready;
        return runSync(argv, options);
    }

    /* A live instance for the library's exports (web/glue.c); what it
     * prints on stderr is read (and cleared) with takeStderr(). */
    function library() {
        let err = sink(null);
        const out = sink(null);
        const M = instantiate(out, {put: (b) => err.put(b)});
        M.takeStderr = function () {
            const t = err.text();
            err = sink(null);
            return t;
        };
        return M;
    }

    const api = {run, runSync, library, ready: null};
    api.ready = (async function () {
        const response = await fetch(wasmUrl, {credentials: 'same-origin'});
        if (!response.ok) throw new Error(`attograd.wasm: ${response.status} ${response.statusText}`);
        /* compiled while it downloads, when the server says application/wasm */
        const streams = response.headers.get('content-type') === 'application/wasm' && WebAssembly.compileStreaming;
        compiled = streams
            ? await WebAssembly.compileStreaming(response)
            : await WebAssembly.compile(await response.arrayBuffer());
        return api;
    })();
    global.attograd = api;
})(typeof self !== 'undefined' ? self : this);
