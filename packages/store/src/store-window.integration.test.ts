import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { TextTokenizer } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { openEmbedder } from './encode/embedder.js';
import { openEmbedderPool } from './encode/embedder-pool.js';
import { MemoryStore } from './store.js';
import type { EncodedTexts } from './types.js';

// A windowed store on all-MiniLM-L6-v2: a memory several windows long keeps every content token
// with its position in the untruncated input, and the evidence names a token of a later window
// correctly. The positions are checked against the model's tokenizer run on the whole text.

const modelDir = resolveModelDir('all-minilm-l6-v2');
const hasModel = existsSync(join(modelDir, 'bfe-model.json'));
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const requireModel = process.env.BFE_REQUIRE_MODEL === '1';

const WINDOW = { size: 64, stride: 48 };
// 148 tokens of garden diary (three windows of 64); 'volcano' occurs once, in the last window.
const LONG = [
  'Maria planted tomatoes and basil in the garden behind her house in early April.',
  'Every morning she watered the beds before walking her dog along the river path.',
  'Her neighbour Tom lent her a ladder to repair the fence that the storm had broken.',
  'In June the first strawberries ripened, and she made jam for the village market.',
  'The market sold bread, cheese, honey and flowers from farms across the valley.',
  'Her brother visited in July and helped her build a small greenhouse from old windows.',
  'They painted the shed blue, cleaned the pond and planted roses by the gate.',
  'By August the pumpkins were enormous and the children from school came to see them.',
  'At the end of the summer she travelled south and climbed a volcano at dawn.',
].join(' ');

const plain = (e: EncodedTexts) => ({
  pooled: Array.from(e.pooled),
  tokenOffsets: Array.from(e.tokenOffsets),
  tokenVectors: Array.from(e.tokenVectors),
  tokenIds: Array.from(e.tokenIds),
  tokenPositions: Array.from(e.tokenPositions),
  truncated: Array.from(e.truncated),
});

describe.skipIf(!hasModel && !requireModel)('a windowed store on MiniLM', () => {
  it('keeps a long memory whole, positions as in the untruncated input, and explains a later window’s token', async () => {
    const manifest = await loadModelManifest(modelDir);
    const whole = (
      await new TextTokenizer(join(modelDir, manifest.tokenizerFile), undefined).encode([LONG])
    )[0]!;
    const embedder = await openEmbedder({ model: { dir: modelDir }, threads: 1 });
    const pieces = Array.from(whole.ids, (id) => embedder.tokenText(id));
    const at = pieces.indexOf('volcano');
    expect(pieces.lastIndexOf('volcano')).toBe(at);
    // Past the second window's last token (content 48 + 61, position 110): in the last only.
    expect(at).toBeGreaterThan(WINDOW.size + WINDOW.stride);
    const positions = Array.from(whole.ids.keys()).filter((j) => whole.content[j] === 1);
    const dir = tmpDir();
    const store = await MemoryStore.open(dir, { embedder, window: WINDOW, threads: 1 });
    const cut = await MemoryStore.open(tmpDir(), { embedder, threads: 1 });
    try {
      const memories = [
        { id: 'long', bank: 'maria', text: LONG },
        { id: 'short', bank: 'maria', text: 'Maria likes tomatoes and roses.' },
      ];
      await store.add(memories);
      await cut.add(memories);
      const snapshot = store.snapshot();
      const view = snapshot.bank('maria');
      const row = view.ids.indexOf('long');
      const start = view.tokenOffsets[row]!;
      const end = view.tokenOffsets[row + 1]!;
      // Every content token once, at its position in the whole input, with its id there.
      expect(Array.from(view.tokenPositions.subarray(start, end))).toEqual(positions);
      expect(Array.from(view.tokenIds.subarray(start, end))).toEqual(
        positions.map((j) => whole.ids[j]!),
      );
      const [first] = await store.search({ bank: 'maria', query: 'volcano', k: 2 });
      expect(first!.id).toBe('long');
      const token = first!.evidence!.tokens.find((t) => t.queryPiece === 'volcano')!;
      expect(token.floored).toBe(false);
      expect(token.memoryPiece).toBe('volcano');
      expect(token.similarity).toBeGreaterThan(0.5);
      // The matched token is the memory's content token at the text's position of 'volcano'.
      expect(view.tokenPositions[start + token.memoryToken]).toBe(at);
      expect(token.memoryTokenId).toBe(whole.ids[at]);
      await snapshot.release();

      // Truncated at the model's maxLength (128), the same memory has no 'volcano' to match.
      const [truncated] = await cut.search({ bank: 'maria', query: 'volcano', k: 2 });
      const cutView = cut.snapshot();
      const cutRows = cutView.bank('maria');
      const cutRow = cutRows.ids.indexOf('long');
      const kept = cutRows.tokenOffsets[cutRow + 1]! - cutRows.tokenOffsets[cutRow]!;
      expect(kept).toBe(manifest.maxLength - 2);
      expect(positions.length).toBeGreaterThan(kept);
      await cutView.release();
      const other = truncated!.evidence!.tokens.find((t) => t.queryPiece === 'volcano')!;
      expect(other.memoryPiece).not.toBe('volcano');
    } finally {
      await store.close();
      await cut.close();
    }

    // On encoder worker threads (the service's embedder): the window reaches the worker.
    const pool = await openEmbedderPool({ model: { dir: modelDir }, threads: 1 });
    try {
      const viaPool = await pool.encode([LONG, 'a dog'], 'passage', { window: WINDOW });
      expect(viaPool.truncated[0]).toBe(0);
      expect(plain(viaPool)).toEqual(
        plain(await embedder.encode([LONG, 'a dog'], 'passage', { window: WINDOW })),
      );
      // Queries are never windowed: cut at maxLength as without it.
      expect(plain(await pool.encode([LONG], 'query', { window: WINDOW }))).toEqual(
        plain(await embedder.encode([LONG], 'query')),
      );
    } finally {
      await pool.dispose();
      await embedder.dispose();
    }
  }, 300_000);
});
