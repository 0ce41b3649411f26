import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { buildParams, grpcAddress, parseMilvusOptions, searchParams } from './options.js';

describe('parseMilvusOptions', () => {
  it('takes an address alone and fills the defaults', () => {
    expect(parseMilvusOptions('milvus://127.0.0.1:19530', {})).toEqual({
      address: 'milvus://127.0.0.1:19530',
      collection: 'bfe_tokens',
      indexType: 'FLAT',
      hnsw: { M: 16, efConstruction: 128, ef: 128 },
      ivf: { nlist: 1024, nprobe: 32 },
      diskann: { searchList: 100 },
      insertBatch: 8192,
      timeoutMs: 120_000,
    });
  });

  it('reads the index and its parameters from the URL query; the token from BFE_MILVUS_TOKEN', () => {
    const o = parseMilvusOptions('milvus://h:19530?index=HNSW&M=32&ef=256&collection=notes', {
      BFE_MILVUS_TOKEN: 'bfe:secret',
    });
    expect(o).toMatchObject({
      address: 'milvus://h:19530',
      indexType: 'HNSW',
      hnsw: { M: 32, efConstruction: 128, ef: 256 },
      collection: 'notes',
      token: 'bfe:secret',
    });
    expect(buildParams(o)).toEqual({ M: 32, efConstruction: 128 });
    expect(searchParams(o, 80)).toEqual({ ef: 256 });
    expect(searchParams(o, 300)).toEqual({ ef: 300 }); // the beam covers the fetch
    const ivf = parseMilvusOptions('https://h:443?index=IVF_SQ8&nlist=64&nprobe=8&ca=/ca.pem', {});
    expect(buildParams(ivf)).toEqual({ nlist: 64 });
    expect(searchParams(ivf, 80)).toEqual({ nprobe: 8 });
    expect(grpcAddress(ivf)).toEqual({ address: 'h:443', ssl: true });
    const disk = parseMilvusOptions('milvus://h:1?index=DISKANN&searchList=50', {});
    expect([buildParams(disk), searchParams(disk, 80)]).toEqual([{}, { search_list: 80 }]);
    // A token in the options wins over the environment.
    expect(
      parseMilvusOptions({ address: 'h:1', token: 'a:b' }, { BFE_MILVUS_TOKEN: 'c:d' }).token,
    ).toBe('a:b');
    for (const bad of [
      'milvus://h:1?index=IVF_PQ',
      'milvus://h:1?M=x',
      'milvus://h:1?colour=red',
    ]) {
      expect(() => parseMilvusOptions(bad, {}), bad).toThrow(ConfigError);
    }
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
    const ca = parseMilvusOptions({ address: 'milvus://10.0.0.5:19530', caPem: '/ca.pem' });
    expect(grpcAddress(ca).ssl).toBe(true); // a CA file means TLS
  });
});
