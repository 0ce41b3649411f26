/**
 * Prints onnxruntime's verbose node-placement log for the scorer's similarity graphs on the
 * WebGPU execution provider (to stderr, from native code), then `placement-done` on stdout.
 * Run in a child process by the WebGPU tests, which parse the log: onnxruntime writes it from
 * C++, so it cannot be captured in the test's own process. Not part of the package API.
 */
import * as ort from 'onnxruntime-node';
import { similarityGraph } from '../onnx-graph.js';

for (const spec of [
  { dim: 16, topK: true, scores: false },
  { dim: 16, topK: true, scores: true },
  { dim: 16, topK: false, scores: true },
] as const) {
  const session = await ort.InferenceSession.create(
    similarityGraph({ ...spec, indices: 'int64' }),
    { executionProviders: ['webgpu'], logSeverityLevel: 0, logVerbosityLevel: 0 },
  );
  await session.release();
}
process.stdout.write('placement-done\n');
