/*
 * common.js - what the page's sections share: finding elements, messages,
 * strict numbers, the Worker that runs the command off the page's thread,
 * the live library instance for the sections that call web/glue.c, files
 * in and out (UTF-8, size limits, downloads) and safetensors headers.
 */
'use strict';

const Page = (function () {
    /* A text the page hands to the GPT: the model, its optimizer, the text as
     * ids and a step's activations must fit in the module's memory (at most
     * 2 GB, and what the browser grants); the command itself reads up to 1 GB. */
    const MAX_TEXT_BYTES = 8 << 20;
    const MAX_CHECKPOINT_BYTES = 256 << 20;

    const $ = (id) => document.getElementById(id);

    function say(el, text) {
        (typeof el === 'string' ? $(el) : el).textContent = text || '';
    }

    /* The first line of what the command said on stderr: its message. */
    function firstLine(text) {
        return (text || '').split('\n').find((l) => l.trim()) || '';
    }

    /* A decimal number, strictly ("1", "-0.5", "2e-3"; not "", "1x", "0x10"). */
    function parseNumber(s) {
        const t = String(s).trim();
        return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) ? Number(t) : NaN;
    }

    /* A comma- or space-separated list as the command takes it: "1,2,3". */
    function listArg(s) {
        return String(s)
            .trim()
            .split(/[\s,]+/)
            .filter((x) => x !== '')
            .join(',');
    }

    /* A command line split into words as a shell would: spaces separate,
     * 'single' and "double" quotes group, a backslash escapes. */
    function splitArgs(line) {
        const words = [];
        let cur = '', inWord = false, quote = null;
        for (let i = 0; i < line.length; i++) {
            const c = line[i];
            if (quote) {
                if (c === quote) quote = null;
                else if (c === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
                else cur += c;
            } else if (c === "'" || c === '"') {
                quote = c;
                inWord = true;
            } else if (c === '\\' && i + 1 < line.length) {
                cur += line[++i];
                inWord = true;
            } else if (/\s/.test(c)) {
                if (inWord) words.push(cur);
                cur = '';
                inWord = false;
            } else {
                cur += c;
                inWord = true;
            }
        }
        if (quote) throw new Error(`unclosed ${quote === '"' ? 'double' : 'single'} quote`);
        if (inWord) words.push(cur);
        return words;
    }

    /* A word as a shell would need it, for showing a command line. */
    function shellWord(w) {
        return /^[A-Za-z0-9_.,:=+\/-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
    }

    function commandLine(argv) {
        return 'attograd ' + argv.map(shellWord).join(' ');
    }

    /* The offset of the first byte that is not UTF-8 (as the command reads
     * it: no overlong forms, no surrogates, nothing past U+10FFFF), or -1. */
    function utf8Error(b) {
        for (let i = 0; i < b.length; ) {
            const c = b[i];
            if (c < 0x80) {
                i++;
                continue;
            }
            /* continuation bytes, and the least code point of that length */
            const n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
            if (n === 0) return i;
            const min = [0, 0x80, 0x800, 0x10000][n];
            let cp = c & (0x3f >> n);
            for (let k = 1; k <= n; k++) {
                if (i + k >= b.length || (b[i + k] & 0xc0) !== 0x80) return i;
                cp = (cp << 6) | (b[i + k] & 0x3f);
            }
            if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
            i += n + 1;
        }
        return -1;
    }

    function megabytes(n) {
        return (n / (1 << 20)).toFixed(1) + ' MB';
    }

    /* A file's bytes, refused with a clear message before it is read when
     * it is larger than limit. */
    async function readFile(file, limit, what) {
        if (file.size > limit)
            throw new Error(
                `${file.name} is ${megabytes(file.size)}: the page takes ${what} up to ` +
                    `${megabytes(limit)}, as the model must fit in the browser's memory for ` +
                    'WebAssembly (the attograd command takes larger ones)'
            );
        return new Uint8Array(await file.arrayBuffer());
    }

    function download(bytes, name) {
        const url = URL.createObjectURL(new Blob([bytes], {type: 'application/octet-stream'}));
        const a = document.createElement('a');
        a.href = url;
        a.download = name;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
    }

    /* A safetensors file's header: {tensors: {name: {dtype, shape, data}}, meta}.
     * Throws with a message when the bytes are not one. */
    function safetensors(bytes, name) {
        if (bytes.length < 8) throw new Error(`${name}: not a safetensors file (${bytes.length} bytes)`);
        const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        const n = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
        if (n > bytes.length - 8) throw new Error(`${name}: not a safetensors file (header length ${n})`);
        let head;
        try {
            head = JSON.parse(new TextDecoder('utf-8', {fatal: true}).decode(bytes.subarray(8, 8 + n)));
        } catch (e) {
            throw new Error(`${name}: not a safetensors file (its header is not JSON)`);
        }
        const base = 8 + n, tensors = {};
        for (const [k, v] of Object.entries(head)) {
            if (k === '__metadata__') continue;
            const [b0, b1] = v.data_offsets;
            tensors[k] = {dtype: v.dtype, shape: v.shape, bytes: bytes.subarray(base + b0, base + b1)};
        }
        return {tensors, meta: head.__metadata__ || {}};
    }

    /* A tensor's values as numbers (F32, F64, I32, I64). */
    function values(t) {
        const b = t.bytes, dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
        const size = {F32: 4, F64: 8, I32: 4, I64: 8}[t.dtype];
        if (!size) throw new Error(`tensor of dtype ${t.dtype}`);
        const out = new Array(b.byteLength / size);
        for (let i = 0; i < out.length; i++)
            out[i] =
                t.dtype === 'F32'
                    ? dv.getFloat32(i * 4, true)
                    : t.dtype === 'F64'
                    ? dv.getFloat64(i * 8, true)
                    : t.dtype === 'I32'
                    ? dv.getInt32(i * 4, true)
                    : Number(dv.getBigInt64(i * 8, true));
        return out;
    }

    /* ---- the Worker: the command, and the GPT's training, off the page's thread ---- */
    let worker = null, nextId = 1;
    const pending = new Map();

    function theWorker() {
        if (worker) return worker;
        worker = new Worker('worker.js');
        worker.onmessage = (e) => {
            const m = e.data, p = pending.get(m.id);
            if (!p) return;
            if (m.type === 'result' || m.type === 'error' || m.type === 'gpt-done') {
                pending.delete(m.id);
                if (m.type === 'error') p.reject(new Error(m.message));
                else p.resolve(m);
            } else if (p.onEvent) {
                p.onEvent(m);
            }
        };
        worker.onerror = (e) => {
            for (const p of pending.values()) p.reject(new Error('the worker failed: ' + e.message));
            pending.clear();
        };
        return worker;
    }

    /* Post msg to the Worker; onEvent gets its progress messages; the
     * promise its last ('result' or 'gpt-done'). */
    function work(msg, onEvent, transfer) {
        const id = nextId++;
        return new Promise((resolve, reject) => {
            pending.set(id, {resolve, reject, onEvent});
            theWorker().postMessage(Object.assign({id}, msg), transfer || []);
        });
    }

    function stopWork() {
        if (worker) worker.postMessage({type: 'stop'});
    }

    /* The command in the Worker: as attograd.run, with onLine(stream, text). */
    async function runInWorker(argv, files, onLine) {
        const m = await work({type: 'run', argv, files: files || {}}, (e) => {
            if (e.type === 'line' && onLine) onLine(e.stream, e.text);
        });
        return m.result;
    }

    /* ---- the library, live, for the sections that call web/glue.c ---- */
    let lib = null;

    function library() {
        if (!lib) lib = attograd.library();
        return lib;
    }

    /* s as a NUL-terminated string in M's memory; free it with M._free. */
    function cString(M, s) {
        const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
        M.stringToUTF8(s, p, n);
        return p;
    }

    return {
        MAX_TEXT_BYTES,
        MAX_CHECKPOINT_BYTES,
        $,
        say,
        firstLine,
        parseNumber,
        listArg,
        splitArgs,
        commandLine,
        utf8Error,
        megabytes,
        readFile,
        download,
        safetensors,
        values,
        work,
        stopWork,
        runInWorker,
        library,
        cString,
    };
})();
