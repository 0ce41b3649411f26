export { fakeEmbedder } from './fake-embedder.js';
export { installTinyQueryModels } from './tiny-query-models.js';
