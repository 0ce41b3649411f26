export { installTinyModel, writeTinyModelSource } from './tiny-model.js';
