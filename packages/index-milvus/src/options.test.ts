import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { grpcAddress, parseMilvusOptions } from './options.js';

describe('parseMilvusOptions', () => {
  it('takes an address alone and fills the defaults', () => {
    expect(parseMilvusOptions('milvus://127.0.0.1:19530')).toEqual({
      address: 'milvus://127.0.0.1:19530',
      collection: 'bfe_tokens',
      indexType: 'FLAT',
      hnsw: { M: 16, efConstruction: 128, ef: 128 },
      insertBatch: 8192,
      timeoutMs: 120_000,
    });
  });

  it('refuses a bad collection name, index type or field', () => {
    for (const bad of [
      { address: 'a:1', collection: 'no-dashes' },
      { address: 'a:1', indexType: 'IVF_PQ' },
      { address: 'a:1', hnsw: { M: 1 } },
      { address: 'a:1', extra: true },
      { address: '' },
    ]) {
      expect(() => parseMilvusOptions(bad), JSON.stringify(bad)).toThrow(ConfigError);
    }
  });
});

describe('grpcAddress', () => {
  it('strips the scheme; https means TLS unless ssl says otherwise', () => {
    const at = (address: string, ssl?: boolean) =>
      grpcAddress(parseMilvusOptions(ssl === undefined ? { address } : { address, ssl }));
    expect(at('milvus://10.0.0.5:19530')).toEqual({ address: '10.0.0.5:19530', ssl: false });
    expect(at('127.0.0.1:19530')).toEqual({ address: '127.0.0.1:19530', ssl: false });
    expect(at('https://milvus.example:443/')).toEqual({ address: 'milvus.example:443', ssl: true });
    expect(at('milvus://10.0.0.5:19530', true)).toEqual({ address: '10.0.0.5:19530', ssl: true });
  });
});
