import protobuf from 'protobufjs/light.js';

/**
 * The adapter kernel's one ONNX graph, serialised in memory with protobufjs (the subset of
 * `onnx.proto` it needs, field numbers as in onnx/onnx.proto, IR 8): no file on disk.
 */
const ONNX_SUBSET = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            irVersion: { type: 'int64', id: 1 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            producerName: { type: 'string', id: 2 },
            docString: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
          },
        },
        OperatorSetIdProto: {
          fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
          },
        },
        ValueInfoProto: {
          fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } },
        },
        TypeProto: { fields: { tensorType: { type: 'TypeProtoTensor', id: 1 } } },
        TypeProtoTensor: {
          fields: {
            elemType: { type: 'int32', id: 1 },
            shape: { type: 'TensorShapeProto', id: 2 },
          },
        },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
        Dimension: {
          fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } },
        },
      },
    },
  },
};

/** `TensorProto.DataType` float32. */
const FLOAT = 1;

function tensor(name: string, elemType: number, dims: readonly (number | string)[]): object {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: {
          dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

/**
 * `ModelProto` bytes of `scores [tokens, rows] = MatMul(memory [tokens, dim], queryT [dim,
 * rows])`: every candidate token's similarity with every (adapted) query row, token-major.
 * @example
 * const bytes = similarityGraph(384); // await ort.InferenceSession.create(bytes)
 */
export function similarityGraph(dim: number): Uint8Array {
  const elem = FLOAT;
  const type = protobuf.Root.fromJSON(ONNX_SUBSET).lookupType('onnx.ModelProto');
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    producerName: '@bfe/adapter',
    docString: `adapter MaxSim similarities, float32, dim ${dim}`,
    graph: {
      name: 'adapter_similarity',
      node: [{ input: ['memory', 'queryT'], output: ['scores'], name: 'sim', opType: 'MatMul' }],
      input: [tensor('memory', elem, ['tokens', dim]), tensor('queryT', elem, [dim, 'rows'])],
      output: [tensor('scores', elem, ['tokens', 'rows'])],
    },
  };
  return type.encode(type.fromObject(model)).finish();
}
