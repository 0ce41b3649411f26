export { fakeEmbedder } from './fake-embedder.js';
