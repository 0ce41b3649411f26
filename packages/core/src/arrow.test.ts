import { Table, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError } from './errors.js';
import { flatListValues, float16ListVector, float32ListVector, readArrowFile } from './arrow.js';

describe('Arrow helpers', () => {
  it('wraps a flat Float32Array as FixedSizeList rows without copying', () => {
    const values = Float32Array.from({ length: 12 }, (_, i) => i / 4);
    const v = float32ListVector(values, 3);
    expect(v.length).toBe(4);
    expect(v.type.listSize).toBe(3);
    expect(Array.from(v.get(2)!)).toEqual([1.5, 1.75, 2]);
    expect(flatListValues(v).values.buffer).toBe(values.buffer);
  });

  it('round-trips through an IPC file and reads back the same values and metadata', () => {
    const values = Float32Array.from({ length: 8 }, (_, i) => Math.sin(i));
    const table = new Table({ vector: float32ListVector(values, 4) });
    table.schema.metadata.set('bfe.dim', '4');
    const bytes = tableToIPC(table, 'file');
    const back = readArrowFile(bytes);
    expect(back.numRows).toBe(2);
    expect(back.schema.metadata.get('bfe.dim')).toBe('4');
    const flat = flatListValues(back.getChild('vector')!);
    expect(Array.from(flat.values)).toEqual(Array.from(values));
  });

  it('keeps Float16 columns as their raw bits', () => {
    const bits = Uint16Array.from([0x3c00, 0x4000, 0xc000, 0x0000]); // 1, 2, -2, 0
    const v = float16ListVector(bits, 2);
    expect(v.length).toBe(2);
    expect(v.type.children[0]!.type.toString()).toBe('Float16');
  });

  it('rejects truncated or foreign bytes with ArtifactCorruptError', () => {
    const table = new Table({ vector: float32ListVector(new Float32Array(4), 2) });
    const bytes = tableToIPC(table, 'file');
    expect(() => readArrowFile(bytes.subarray(0, bytes.length - 10), 'x.arrow')).toThrow(
      ArtifactCorruptError,
    );
    expect(() => readArrowFile(new TextEncoder().encode('not arrow at all'))).toThrow(/magic/);
  });

  it('rejects arrays that are not a whole number of rows', () => {
    expect(() => float32ListVector(new Float32Array(5), 2)).toThrow(/multiple of dim/);
    expect(() => float32ListVector(new Float32Array(4), 0)).toThrow(/positive integer/);
  });
});
