// ort_output.js -- ONNX Runtime's first output for a model, as an ONNX TensorProto (.pb), for the
// checked-in expected outputs of tests/data/models (see its README).  A development tool, never
// a dependency of the library or the tests: it needs npm's onnxruntime-node beside it or on
// NODE_PATH (`npm install --ignore-scripts onnxruntime-node`).  The input is the light models'
// convention: every float input of shape S (unknown dims taken as 1) is arange(prod(S)) / prod(S).
// The session runs with graph optimizations off, so the figures are ONNX Runtime's kernels on
// the graph as written.
// usage: node tools/ort_output.js MODEL.onnx OUT_output_0.pb
const ort = require('onnxruntime-node');
const fs = require('fs');
(async () => {
  const s = await ort.InferenceSession.create(process.argv[2], {graphOptimizationLevel: 'disabled'});
  const feeds = {};
  for (const name of s.inputNames) {
    const meta = s.inputMetadata ? s.inputMetadata.find(m => m.name === name) : null;
    let dims = meta && meta.shape ? meta.shape.map(d => typeof d === 'number' ? d : 1) : null;
    if (!dims) throw new Error('no shape for ' + name);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = i / n;
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  const t0 = process.hrtime.bigint();
  const out = await s.run(feeds);
  const t1 = process.hrtime.bigint();
  const o = out[s.outputNames[0]];
  const varint = v => { const b = []; while (v > 127) { b.push((v & 127) | 128); v = Math.floor(v / 128); } b.push(v); return b; };
  const raw = Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength);
  const head = [];
  for (const d of o.dims) head.push(0x08, ...varint(d));
  head.push(0x10, 1, 0x4a, ...varint(raw.length));
  fs.writeFileSync(process.argv[3], Buffer.concat([Buffer.from(head), raw]));
  console.log('dims', o.dims, 'ms', Number(t1 - t0) / 1e6, 'first', Array.from(o.data.slice(0, 4)));
})().catch(e => { console.error(e); process.exit(1); });
