// kafkajs client program for the Shale compatibility matrix (see ../../README.md).
//
//   node client.js create|produce|consume --bootstrap H:P --topic T [--partitions N]
//       [--first I --count N --codecs a,b] [--group G --member M]
//
// Prints one JSON object per line on stdout (kafkajs' own logs go to stderr). kafkajs ships only
// gzip; snappy, lz4 and zstd are registered here from pure-JS/WebAssembly packages
// (package.json), so nothing needs a native build.
'use strict'

const crypto = require('crypto')
const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = require('kafkajs')
const SnappyJS = require('snappyjs')
const lz4 = require('lz4js')
const xxh32 = require('lz4js/xxh32.js')
const zstd = require('@bokuweb/zstd-wasm')

function emit (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

// --- codecs ---------------------------------------------------------------------------------

// Kafka's Java clients write snappy in snappy-java's "xerial" framing (magic, then length-prefixed
// raw blocks); other clients write a raw block. Read both, write the framed form.
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const snappyCodec = () => ({
  async compress (encoder) {
    const src = encoder.buffer
    const parts = [XERIAL_MAGIC, Buffer.from([0, 0, 0, 1, 0, 0, 0, 1])]
    for (let off = 0; off < src.length || off === 0; off += 32 * 1024) {
      const block = Buffer.from(SnappyJS.compress(src.subarray(off, off + 32 * 1024)))
      const len = Buffer.alloc(4)
      len.writeUInt32BE(block.length)
      parts.push(len, block)
      if (src.length === 0) break
    }
    return Buffer.concat(parts)
  },
  async decompress (buffer) {
    if (buffer.length >= 16 && buffer.subarray(0, 8).equals(XERIAL_MAGIC)) {
      const out = []
      for (let off = 16; off < buffer.length;) {
        const len = buffer.readUInt32BE(off)
        out.push(Buffer.from(SnappyJS.uncompress(buffer.subarray(off + 4, off + 4 + len))))
        off += 4 + len
      }
      return Buffer.concat(out)
    }
    return Buffer.from(SnappyJS.uncompress(buffer))
  }
})

// Kafka's LZ4 is the LZ4 frame format with independent blocks. lz4js reads any frame, but its
// writer leaves the block-independence flag clear, which Kafka refuses ("Dependent block stream
// is unsupported"): write the frame here from lz4js' block compressor, one fresh hash table per
// 64 KiB block.
function lz4Frame (src) {
  const BLOCK = 64 * 1024
  const header = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0]) // magic, FLG, BD, HC
  header[6] = (xxh32.hash(0, header, 4, 2) >> 8) & 0xff
  const parts = [header]
  const out = new Uint8Array(lz4.compressBound(BLOCK))
  for (let off = 0; off < src.length; off += BLOCK) {
    const block = src.subarray(off, off + BLOCK)
    const n = lz4.compressBlock(block, out, 0, block.length, new Uint32Array(1 << 16))
    const len = Buffer.alloc(4)
    if (n === 0 || n >= block.length) {
      len.writeUInt32LE((0x80000000 | block.length) >>> 0) // stored uncompressed
      parts.push(len, Buffer.from(block))
    } else {
      len.writeUInt32LE(n)
      parts.push(len, Buffer.from(out.subarray(0, n)))
    }
  }
  parts.push(Buffer.alloc(4)) // end mark
  return Buffer.concat(parts)
}

const lz4Codec = () => ({
  async compress (encoder) {
    return lz4Frame(encoder.buffer)
  },
  async decompress (buffer) {
    return Buffer.from(lz4.decompress(buffer))
  }
})

let zstdReady = null
const zstdCodec = () => ({
  async compress (encoder) {
    await zstdReady
    return Buffer.from(zstd.compress(encoder.buffer, 3))
  },
  async decompress (buffer) {
    await zstdReady
    // Frames written by streaming compressors carry no content size: give a bound (a batch is
    // at most a fetch response's worth of data).
    return Buffer.from(zstd.decompress(buffer, { defaultHeapSize: 64 * 1024 * 1024 }))
  }
})

CompressionCodecs[CompressionTypes.Snappy] = snappyCodec
CompressionCodecs[CompressionTypes.LZ4] = lz4Codec
CompressionCodecs[CompressionTypes.ZSTD] = zstdCodec

const CODEC_TYPES = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD
}

// --- records --------------------------------------------------------------------------------

const key = i => 'key-' + (i % 1000)
const value = i => 'value-' + i + '-' + String.fromCharCode(97 + (i % 26)).repeat(i % 500)

function parseArgs (argv) {
  const a = { partitions: 6, first: 0, count: 0, codecs: 'none,gzip,snappy,lz4,zstd', group: '', member: '' }
  a.command = argv[0]
  for (let i = 1; i + 1 < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) throw new Error('bad option ' + argv[i])
    a[argv[i].slice(2)] = argv[i + 1]
  }
  a.partitions = Number(a.partitions)
  a.first = Number(a.first)
  a.count = Number(a.count)
  return a
}

const stderrLog = () => ({ namespace, level, label, log }) => {
  process.stderr.write(`${label} [${namespace}] ${log.message} ${JSON.stringify(log)}\n`)
}

function kafka (a, clientId) {
  return new Kafka({
    clientId: clientId || 'compat-kafkajs',
    brokers: [a.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    retry: { retries: 10 }
  })
}

async function create (a) {
  const admin = kafka(a).admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic: a.topic, numPartitions: a.partitions, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 30000
  })
  await admin.disconnect()
  if (!created) throw new Error('topic ' + a.topic + ' already exists')
  emit({ ev: 'created', topic: a.topic })
}

async function produce (a) {
  const codecs = a.codecs.split(',')
  const n = codecs.length
  for (let ci = 0; ci < n; ci++) {
    const codec = codecs[ci]
    const lo = a.first + Math.floor((ci * a.count + n - 1) / n)
    const hi = a.first + Math.floor(((ci + 1) * a.count + n - 1) / n)
    // Remember where the (Java-compatible murmur2) default partitioner puts each message: send()
    // reports one base offset per partition, and messages keep their order within it.
    const chosen = new Map()
    const partitioner = () => {
      const inner = Partitioners.DefaultPartitioner()
      return args => {
        const p = inner(args)
        chosen.set(args.message, p)
        return p
      }
    }
    const producer = kafka(a).producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: partitioner })
    await producer.connect()
    for (let start = lo; start < hi; start += 500) {
      const messages = []
      for (let i = start; i < Math.min(hi, start + 500); i++) {
        messages.push({ key: key(i), value: value(i), headers: { idx: String(i), codec }, _i: i })
      }
      const meta = await producer.send({ topic: a.topic, acks: -1, compression: CODEC_TYPES[codec], messages })
      const base = new Map(meta.map(m => [m.partition, BigInt(m.baseOffset)]))
      const next = new Map()
      for (const m of messages) {
        const p = chosen.get(m)
        const k = next.get(p) || 0n
        next.set(p, k + 1n)
        emit({ ev: 'ack', i: m._i, p, o: Number(base.get(p) + k) })
      }
    }
    await producer.disconnect()
  }
  emit({ ev: 'done' })
}

async function consume (a) {
  const consumer = kafka(a, a.member).consumer({
    groupId: a.group,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 500 // heartbeats (and so rebalances) wait for the fetch long-poll
  })
  let assigned = []
  consumer.on(consumer.events.GROUP_JOIN, e => {
    // kafkajs rebalances eagerly: a join replaces the whole assignment.
    if (assigned.length) emit({ ev: 'revoked', parts: assigned })
    assigned = (e.payload.memberAssignment[a.topic] || []).slice().sort((x, y) => x - y)
    emit({ ev: 'assigned', parts: assigned })
  })
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    try {
      await consumer.disconnect() // waits for the running batch, then leaves the group
      emit({ ev: 'closed' })
      process.exit(0)
    } catch (e) {
      process.stderr.write('disconnect: ' + e.stack + '\n')
      process.exit(1)
    }
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  emit({ ev: 'started' }) // from here on SIGTERM means a clean close
  await consumer.connect()
  await consumer.subscribe({ topics: [a.topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      let last = null
      for (const m of batch.messages) {
        const hdrs = Object.entries(m.headers || {}).map(([k, v]) => [k, v === null || v === undefined ? null : v.toString()])
        emit({
          ev: 'rec',
          p: batch.partition,
          o: Number(m.offset),
          k: m.key === null ? null : m.key.toString(),
          vh: crypto.createHash('sha256').update(m.value || Buffer.alloc(0)).digest('hex'),
          h: hdrs
        })
        resolveOffset(m.offset)
        last = m.offset
      }
      if (last !== null) {
        const off = (BigInt(last) + 1n).toString()
        try {
          // Committed before eachBatch returns, so a rebalance (which waits for it) never hands
          // the partition over with consumed-but-uncommitted records.
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: off }])
          emit({ ev: 'commit', offs: { [batch.partition]: Number(off) } })
        } catch (e) {
          emit({ ev: 'commit_failed', error: String(e) })
        }
      }
      await heartbeat()
    }
  })
}

async function main () {
  const a = parseArgs(process.argv.slice(2))
  zstdReady = zstd.init()
  if (a.command === 'create') return create(a).then(() => process.exit(0))
  if (a.command === 'produce') return produce(a).then(() => process.exit(0))
  if (a.command === 'consume') return consume(a) // runs until SIGTERM
  throw new Error('unknown command ' + a.command)
}

main().catch(e => {
  process.stderr.write('kafkajs client: ' + (e.stack || e) + '\n')
  process.exit(1)
})
