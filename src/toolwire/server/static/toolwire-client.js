// node_modules/@msgpack/msgpack/dist.esm/utils/utf8.mjs
function utf8Count(str) {
  const strLength = str.length;
  let byteLength = 0;
  let pos = 0;
  while (pos < strLength) {
    let value = str.charCodeAt(pos++);
    if ((value & 4294967168) === 0) {
      byteLength++;
      continue;
    } else if ((value & 4294965248) === 0) {
      byteLength += 2;
    } else {
      if (value >= 55296 && value <= 56319) {
        if (pos < strLength) {
          const extra = str.charCodeAt(pos);
          if ((extra & 64512) === 56320) {
            ++pos;
            value = ((value & 1023) << 10) + (extra & 1023) + 65536;
          }
        }
      }
      if ((value & 4294901760) === 0) {
        byteLength += 3;
      } else {
        byteLength += 4;
      }
    }
  }
  return byteLength;
}
function utf8EncodeJs(str, output, outputOffset) {
  const strLength = str.length;
  let offset = outputOffset;
  let pos = 0;
  while (pos < strLength) {
    let value = str.charCodeAt(pos++);
    if ((value & 4294967168) === 0) {
      output[offset++] = value;
      continue;
    } else if ((value & 4294965248) === 0) {
      output[offset++] = value >> 6 & 31 | 192;
    } else {
      if (value >= 55296 && value <= 56319) {
        if (pos < strLength) {
          const extra = str.charCodeAt(pos);
          if ((extra & 64512) === 56320) {
            ++pos;
            value = ((value & 1023) << 10) + (extra & 1023) + 65536;
          }
        }
      }
      if ((value & 4294901760) === 0) {
        output[offset++] = value >> 12 & 15 | 224;
        output[offset++] = value >> 6 & 63 | 128;
      } else {
        output[offset++] = value >> 18 & 7 | 240;
        output[offset++] = value >> 12 & 63 | 128;
        output[offset++] = value >> 6 & 63 | 128;
      }
    }
    output[offset++] = value & 63 | 128;
  }
}
var sharedTextEncoder = new TextEncoder();
var TEXT_ENCODER_THRESHOLD = 50;
function utf8EncodeTE(str, output, outputOffset) {
  sharedTextEncoder.encodeInto(str, output.subarray(outputOffset));
}
function utf8Encode(str, output, outputOffset) {
  if (str.length > TEXT_ENCODER_THRESHOLD) {
    utf8EncodeTE(str, output, outputOffset);
  } else {
    utf8EncodeJs(str, output, outputOffset);
  }
}
var CHUNK_SIZE = 4096;
function utf8DecodeJs(bytes, inputOffset, byteLength) {
  let offset = inputOffset;
  const end = offset + byteLength;
  const units = [];
  let result = "";
  while (offset < end) {
    const byte1 = bytes[offset++];
    if ((byte1 & 128) === 0) {
      units.push(byte1);
    } else if ((byte1 & 224) === 192) {
      const byte2 = bytes[offset++] & 63;
      units.push((byte1 & 31) << 6 | byte2);
    } else if ((byte1 & 240) === 224) {
      const byte2 = bytes[offset++] & 63;
      const byte3 = bytes[offset++] & 63;
      units.push((byte1 & 31) << 12 | byte2 << 6 | byte3);
    } else if ((byte1 & 248) === 240) {
      const byte2 = bytes[offset++] & 63;
      const byte3 = bytes[offset++] & 63;
      const byte4 = bytes[offset++] & 63;
      let unit = (byte1 & 7) << 18 | byte2 << 12 | byte3 << 6 | byte4;
      if (unit > 65535) {
        unit -= 65536;
        units.push(unit >>> 10 & 1023 | 55296);
        unit = 56320 | unit & 1023;
      }
      units.push(unit);
    } else {
      units.push(byte1);
    }
    if (units.length >= CHUNK_SIZE) {
      result += String.fromCharCode(...units);
      units.length = 0;
    }
  }
  if (units.length > 0) {
    result += String.fromCharCode(...units);
  }
  return result;
}
var sharedTextDecoder = new TextDecoder();
var TEXT_DECODER_THRESHOLD = 200;
function utf8DecodeTD(bytes, inputOffset, byteLength) {
  const stringBytes = bytes.subarray(inputOffset, inputOffset + byteLength);
  return sharedTextDecoder.decode(stringBytes);
}
function utf8Decode(bytes, inputOffset, byteLength) {
  if (byteLength > TEXT_DECODER_THRESHOLD) {
    return utf8DecodeTD(bytes, inputOffset, byteLength);
  } else {
    return utf8DecodeJs(bytes, inputOffset, byteLength);
  }
}

// node_modules/@msgpack/msgpack/dist.esm/ExtData.mjs
var ExtData = class {
  type;
  data;
  constructor(type, data) {
    this.type = type;
    this.data = data;
  }
};

// node_modules/@msgpack/msgpack/dist.esm/DecodeError.mjs
var DecodeError = class _DecodeError extends Error {
  constructor(message) {
    super(message);
    const proto = Object.create(_DecodeError.prototype);
    Object.setPrototypeOf(this, proto);
    Object.defineProperty(this, "name", {
      configurable: true,
      enumerable: false,
      value: _DecodeError.name
    });
  }
};

// node_modules/@msgpack/msgpack/dist.esm/utils/int.mjs
var UINT32_MAX = 4294967295;
function setUint64(view, offset, value) {
  const high = value / 4294967296;
  const low = value;
  view.setUint32(offset, high);
  view.setUint32(offset + 4, low);
}
function setInt64(view, offset, value) {
  const high = Math.floor(value / 4294967296);
  const low = value;
  view.setUint32(offset, high);
  view.setUint32(offset + 4, low);
}
function getInt64(view, offset) {
  const high = view.getInt32(offset);
  const low = view.getUint32(offset + 4);
  return high * 4294967296 + low;
}
function getUint64(view, offset) {
  const high = view.getUint32(offset);
  const low = view.getUint32(offset + 4);
  return high * 4294967296 + low;
}

// node_modules/@msgpack/msgpack/dist.esm/timestamp.mjs
var EXT_TIMESTAMP = -1;
var TIMESTAMP32_MAX_SEC = 4294967296 - 1;
var TIMESTAMP64_MAX_SEC = 17179869184 - 1;
function encodeTimeSpecToTimestamp({ sec, nsec }) {
  if (sec >= 0 && nsec >= 0 && sec <= TIMESTAMP64_MAX_SEC) {
    if (nsec === 0 && sec <= TIMESTAMP32_MAX_SEC) {
      const rv = new Uint8Array(4);
      const view = new DataView(rv.buffer);
      view.setUint32(0, sec);
      return rv;
    } else {
      const secHigh = sec / 4294967296;
      const secLow = sec & 4294967295;
      const rv = new Uint8Array(8);
      const view = new DataView(rv.buffer);
      view.setUint32(0, nsec << 2 | secHigh & 3);
      view.setUint32(4, secLow);
      return rv;
    }
  } else {
    const rv = new Uint8Array(12);
    const view = new DataView(rv.buffer);
    view.setUint32(0, nsec);
    setInt64(view, 4, sec);
    return rv;
  }
}
function encodeDateToTimeSpec(date) {
  const msec = date.getTime();
  const sec = Math.floor(msec / 1e3);
  const nsec = (msec - sec * 1e3) * 1e6;
  const nsecInSec = Math.floor(nsec / 1e9);
  return {
    sec: sec + nsecInSec,
    nsec: nsec - nsecInSec * 1e9
  };
}
function encodeTimestampExtension(object) {
  if (object instanceof Date) {
    const timeSpec = encodeDateToTimeSpec(object);
    return encodeTimeSpecToTimestamp(timeSpec);
  } else {
    return null;
  }
}
function decodeTimestampToTimeSpec(data) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  switch (data.byteLength) {
    case 4: {
      const sec = view.getUint32(0);
      const nsec = 0;
      return { sec, nsec };
    }
    case 8: {
      const nsec30AndSecHigh2 = view.getUint32(0);
      const secLow32 = view.getUint32(4);
      const sec = (nsec30AndSecHigh2 & 3) * 4294967296 + secLow32;
      const nsec = nsec30AndSecHigh2 >>> 2;
      return { sec, nsec };
    }
    case 12: {
      const sec = getInt64(view, 4);
      const nsec = view.getUint32(0);
      return { sec, nsec };
    }
    default:
      throw new DecodeError(`Unrecognized data size for timestamp (expected 4, 8, or 12): ${data.length}`);
  }
}
function decodeTimestampExtension(data) {
  const timeSpec = decodeTimestampToTimeSpec(data);
  return new Date(timeSpec.sec * 1e3 + timeSpec.nsec / 1e6);
}
var timestampExtension = {
  type: EXT_TIMESTAMP,
  encode: encodeTimestampExtension,
  decode: decodeTimestampExtension
};

// node_modules/@msgpack/msgpack/dist.esm/ExtensionCodec.mjs
var ExtensionCodec = class _ExtensionCodec {
  static defaultCodec = new _ExtensionCodec();
  // ensures ExtensionCodecType<X> matches ExtensionCodec<X>
  // this will make type errors a lot more clear
  // eslint-disable-next-line @typescript-eslint/naming-convention
  __brand;
  // built-in extensions
  builtInEncoders = [];
  builtInDecoders = [];
  // custom extensions
  encoders = [];
  decoders = [];
  constructor() {
    this.register(timestampExtension);
  }
  register({ type, encode: encode3, decode: decode3 }) {
    if (type >= 0) {
      this.encoders[type] = encode3;
      this.decoders[type] = decode3;
    } else {
      const index = -1 - type;
      this.builtInEncoders[index] = encode3;
      this.builtInDecoders[index] = decode3;
    }
  }
  tryToEncode(object, context) {
    for (let i = 0; i < this.builtInEncoders.length; i++) {
      const encodeExt = this.builtInEncoders[i];
      if (encodeExt != null) {
        const data = encodeExt(object, context);
        if (data != null) {
          const type = -1 - i;
          return new ExtData(type, data);
        }
      }
    }
    for (let i = 0; i < this.encoders.length; i++) {
      const encodeExt = this.encoders[i];
      if (encodeExt != null) {
        const data = encodeExt(object, context);
        if (data != null) {
          const type = i;
          return new ExtData(type, data);
        }
      }
    }
    if (object instanceof ExtData) {
      return object;
    }
    return null;
  }
  decode(data, type, context) {
    const decodeExt = type < 0 ? this.builtInDecoders[-1 - type] : this.decoders[type];
    if (decodeExt) {
      return decodeExt(data, type, context);
    } else {
      return new ExtData(type, data);
    }
  }
};

// node_modules/@msgpack/msgpack/dist.esm/utils/typedArrays.mjs
function isArrayBufferLike(buffer) {
  return buffer instanceof ArrayBuffer || typeof SharedArrayBuffer !== "undefined" && buffer instanceof SharedArrayBuffer;
}
function ensureUint8Array(buffer) {
  if (buffer instanceof Uint8Array) {
    return buffer;
  } else if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  } else if (isArrayBufferLike(buffer)) {
    return new Uint8Array(buffer);
  } else {
    return Uint8Array.from(buffer);
  }
}

// node_modules/@msgpack/msgpack/dist.esm/Encoder.mjs
var DEFAULT_MAX_DEPTH = 100;
var DEFAULT_INITIAL_BUFFER_SIZE = 2048;
var Encoder = class _Encoder {
  extensionCodec;
  context;
  useBigInt64;
  maxDepth;
  initialBufferSize;
  sortKeys;
  forceFloat32;
  ignoreUndefined;
  forceIntegerToFloat;
  pos;
  view;
  bytes;
  entered = false;
  constructor(options) {
    this.extensionCodec = options?.extensionCodec ?? ExtensionCodec.defaultCodec;
    this.context = options?.context;
    this.useBigInt64 = options?.useBigInt64 ?? false;
    this.maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.initialBufferSize = options?.initialBufferSize ?? DEFAULT_INITIAL_BUFFER_SIZE;
    this.sortKeys = options?.sortKeys ?? false;
    this.forceFloat32 = options?.forceFloat32 ?? false;
    this.ignoreUndefined = options?.ignoreUndefined ?? false;
    this.forceIntegerToFloat = options?.forceIntegerToFloat ?? false;
    this.pos = 0;
    this.view = new DataView(new ArrayBuffer(this.initialBufferSize));
    this.bytes = new Uint8Array(this.view.buffer);
  }
  clone() {
    return new _Encoder({
      extensionCodec: this.extensionCodec,
      context: this.context,
      useBigInt64: this.useBigInt64,
      maxDepth: this.maxDepth,
      initialBufferSize: this.initialBufferSize,
      sortKeys: this.sortKeys,
      forceFloat32: this.forceFloat32,
      ignoreUndefined: this.ignoreUndefined,
      forceIntegerToFloat: this.forceIntegerToFloat
    });
  }
  reinitializeState() {
    this.pos = 0;
  }
  /**
   * This is almost equivalent to {@link Encoder#encode}, but it returns an reference of the encoder's internal buffer and thus much faster than {@link Encoder#encode}.
   *
   * @returns Encodes the object and returns a shared reference the encoder's internal buffer.
   */
  encodeSharedRef(object) {
    if (this.entered) {
      const instance = this.clone();
      return instance.encodeSharedRef(object);
    }
    try {
      this.entered = true;
      this.reinitializeState();
      this.doEncode(object, 1);
      return this.bytes.subarray(0, this.pos);
    } finally {
      this.entered = false;
    }
  }
  /**
   * @returns Encodes the object and returns a copy of the encoder's internal buffer.
   */
  encode(object) {
    if (this.entered) {
      const instance = this.clone();
      return instance.encode(object);
    }
    try {
      this.entered = true;
      this.reinitializeState();
      this.doEncode(object, 1);
      return this.bytes.slice(0, this.pos);
    } finally {
      this.entered = false;
    }
  }
  doEncode(object, depth) {
    if (depth > this.maxDepth) {
      throw new Error(`Too deep objects in depth ${depth}`);
    }
    if (object == null) {
      this.encodeNil();
    } else if (typeof object === "boolean") {
      this.encodeBoolean(object);
    } else if (typeof object === "number") {
      if (!this.forceIntegerToFloat) {
        this.encodeNumber(object);
      } else {
        this.encodeNumberAsFloat(object);
      }
    } else if (typeof object === "string") {
      this.encodeString(object);
    } else if (this.useBigInt64 && typeof object === "bigint") {
      this.encodeBigInt64(object);
    } else {
      this.encodeObject(object, depth);
    }
  }
  ensureBufferSizeToWrite(sizeToWrite) {
    const requiredSize = this.pos + sizeToWrite;
    if (this.view.byteLength < requiredSize) {
      this.resizeBuffer(requiredSize * 2);
    }
  }
  resizeBuffer(newSize) {
    const newBuffer = new ArrayBuffer(newSize);
    const newBytes = new Uint8Array(newBuffer);
    const newView = new DataView(newBuffer);
    newBytes.set(this.bytes);
    this.view = newView;
    this.bytes = newBytes;
  }
  encodeNil() {
    this.writeU8(192);
  }
  encodeBoolean(object) {
    if (object === false) {
      this.writeU8(194);
    } else {
      this.writeU8(195);
    }
  }
  encodeNumber(object) {
    if (!this.forceIntegerToFloat && Number.isSafeInteger(object)) {
      if (object >= 0) {
        if (object < 128) {
          this.writeU8(object);
        } else if (object < 256) {
          this.writeU8(204);
          this.writeU8(object);
        } else if (object < 65536) {
          this.writeU8(205);
          this.writeU16(object);
        } else if (object < 4294967296) {
          this.writeU8(206);
          this.writeU32(object);
        } else if (!this.useBigInt64) {
          this.writeU8(207);
          this.writeU64(object);
        } else {
          this.encodeNumberAsFloat(object);
        }
      } else {
        if (object >= -32) {
          this.writeU8(224 | object + 32);
        } else if (object >= -128) {
          this.writeU8(208);
          this.writeI8(object);
        } else if (object >= -32768) {
          this.writeU8(209);
          this.writeI16(object);
        } else if (object >= -2147483648) {
          this.writeU8(210);
          this.writeI32(object);
        } else if (!this.useBigInt64) {
          this.writeU8(211);
          this.writeI64(object);
        } else {
          this.encodeNumberAsFloat(object);
        }
      }
    } else {
      this.encodeNumberAsFloat(object);
    }
  }
  encodeNumberAsFloat(object) {
    if (this.forceFloat32) {
      this.writeU8(202);
      this.writeF32(object);
    } else {
      this.writeU8(203);
      this.writeF64(object);
    }
  }
  encodeBigInt64(object) {
    if (object >= BigInt(0)) {
      this.writeU8(207);
      this.writeBigUint64(object);
    } else {
      this.writeU8(211);
      this.writeBigInt64(object);
    }
  }
  writeStringHeader(byteLength) {
    if (byteLength < 32) {
      this.writeU8(160 + byteLength);
    } else if (byteLength < 256) {
      this.writeU8(217);
      this.writeU8(byteLength);
    } else if (byteLength < 65536) {
      this.writeU8(218);
      this.writeU16(byteLength);
    } else if (byteLength < 4294967296) {
      this.writeU8(219);
      this.writeU32(byteLength);
    } else {
      throw new Error(`Too long string: ${byteLength} bytes in UTF-8`);
    }
  }
  encodeString(object) {
    const maxHeaderSize = 1 + 4;
    const byteLength = utf8Count(object);
    this.ensureBufferSizeToWrite(maxHeaderSize + byteLength);
    this.writeStringHeader(byteLength);
    utf8Encode(object, this.bytes, this.pos);
    this.pos += byteLength;
  }
  encodeObject(object, depth) {
    const ext = this.extensionCodec.tryToEncode(object, this.context);
    if (ext != null) {
      this.encodeExtension(ext);
    } else if (Array.isArray(object)) {
      this.encodeArray(object, depth);
    } else if (ArrayBuffer.isView(object)) {
      this.encodeBinary(object);
    } else if (typeof object === "object") {
      this.encodeMap(object, depth);
    } else {
      throw new Error(`Unrecognized object: ${Object.prototype.toString.apply(object)}`);
    }
  }
  encodeBinary(object) {
    const size = object.byteLength;
    if (size < 256) {
      this.writeU8(196);
      this.writeU8(size);
    } else if (size < 65536) {
      this.writeU8(197);
      this.writeU16(size);
    } else if (size < 4294967296) {
      this.writeU8(198);
      this.writeU32(size);
    } else {
      throw new Error(`Too large binary: ${size}`);
    }
    const bytes = ensureUint8Array(object);
    this.writeU8a(bytes);
  }
  encodeArray(object, depth) {
    const size = object.length;
    if (size < 16) {
      this.writeU8(144 + size);
    } else if (size < 65536) {
      this.writeU8(220);
      this.writeU16(size);
    } else if (size < 4294967296) {
      this.writeU8(221);
      this.writeU32(size);
    } else {
      throw new Error(`Too large array: ${size}`);
    }
    for (const item of object) {
      this.doEncode(item, depth + 1);
    }
  }
  countWithoutUndefined(object, keys) {
    let count = 0;
    for (const key of keys) {
      if (object[key] !== void 0) {
        count++;
      }
    }
    return count;
  }
  encodeMap(object, depth) {
    const keys = Object.keys(object);
    if (this.sortKeys) {
      keys.sort();
    }
    const size = this.ignoreUndefined ? this.countWithoutUndefined(object, keys) : keys.length;
    if (size < 16) {
      this.writeU8(128 + size);
    } else if (size < 65536) {
      this.writeU8(222);
      this.writeU16(size);
    } else if (size < 4294967296) {
      this.writeU8(223);
      this.writeU32(size);
    } else {
      throw new Error(`Too large map object: ${size}`);
    }
    for (const key of keys) {
      const value = object[key];
      if (!(this.ignoreUndefined && value === void 0)) {
        this.encodeString(key);
        this.doEncode(value, depth + 1);
      }
    }
  }
  encodeExtension(ext) {
    if (typeof ext.data === "function") {
      const data = ext.data(this.pos + 6);
      const size2 = data.length;
      if (size2 >= 4294967296) {
        throw new Error(`Too large extension object: ${size2}`);
      }
      this.writeU8(201);
      this.writeU32(size2);
      this.writeI8(ext.type);
      this.writeU8a(data);
      return;
    }
    const size = ext.data.length;
    if (size === 1) {
      this.writeU8(212);
    } else if (size === 2) {
      this.writeU8(213);
    } else if (size === 4) {
      this.writeU8(214);
    } else if (size === 8) {
      this.writeU8(215);
    } else if (size === 16) {
      this.writeU8(216);
    } else if (size < 256) {
      this.writeU8(199);
      this.writeU8(size);
    } else if (size < 65536) {
      this.writeU8(200);
      this.writeU16(size);
    } else if (size < 4294967296) {
      this.writeU8(201);
      this.writeU32(size);
    } else {
      throw new Error(`Too large extension object: ${size}`);
    }
    this.writeI8(ext.type);
    this.writeU8a(ext.data);
  }
  writeU8(value) {
    this.ensureBufferSizeToWrite(1);
    this.view.setUint8(this.pos, value);
    this.pos++;
  }
  writeU8a(values) {
    const size = values.length;
    this.ensureBufferSizeToWrite(size);
    this.bytes.set(values, this.pos);
    this.pos += size;
  }
  writeI8(value) {
    this.ensureBufferSizeToWrite(1);
    this.view.setInt8(this.pos, value);
    this.pos++;
  }
  writeU16(value) {
    this.ensureBufferSizeToWrite(2);
    this.view.setUint16(this.pos, value);
    this.pos += 2;
  }
  writeI16(value) {
    this.ensureBufferSizeToWrite(2);
    this.view.setInt16(this.pos, value);
    this.pos += 2;
  }
  writeU32(value) {
    this.ensureBufferSizeToWrite(4);
    this.view.setUint32(this.pos, value);
    this.pos += 4;
  }
  writeI32(value) {
    this.ensureBufferSizeToWrite(4);
    this.view.setInt32(this.pos, value);
    this.pos += 4;
  }
  writeF32(value) {
    this.ensureBufferSizeToWrite(4);
    this.view.setFloat32(this.pos, value);
    this.pos += 4;
  }
  writeF64(value) {
    this.ensureBufferSizeToWrite(8);
    this.view.setFloat64(this.pos, value);
    this.pos += 8;
  }
  writeU64(value) {
    this.ensureBufferSizeToWrite(8);
    setUint64(this.view, this.pos, value);
    this.pos += 8;
  }
  writeI64(value) {
    this.ensureBufferSizeToWrite(8);
    setInt64(this.view, this.pos, value);
    this.pos += 8;
  }
  writeBigUint64(value) {
    this.ensureBufferSizeToWrite(8);
    this.view.setBigUint64(this.pos, value);
    this.pos += 8;
  }
  writeBigInt64(value) {
    this.ensureBufferSizeToWrite(8);
    this.view.setBigInt64(this.pos, value);
    this.pos += 8;
  }
};

// node_modules/@msgpack/msgpack/dist.esm/encode.mjs
function encode(value, options) {
  const encoder2 = new Encoder(options);
  return encoder2.encodeSharedRef(value);
}

// node_modules/@msgpack/msgpack/dist.esm/utils/prettyByte.mjs
function prettyByte(byte) {
  return `${byte < 0 ? "-" : ""}0x${Math.abs(byte).toString(16).padStart(2, "0")}`;
}

// node_modules/@msgpack/msgpack/dist.esm/CachedKeyDecoder.mjs
var DEFAULT_MAX_KEY_LENGTH = 16;
var DEFAULT_MAX_LENGTH_PER_KEY = 16;
var CachedKeyDecoder = class {
  hit = 0;
  miss = 0;
  caches;
  maxKeyLength;
  maxLengthPerKey;
  constructor(maxKeyLength = DEFAULT_MAX_KEY_LENGTH, maxLengthPerKey = DEFAULT_MAX_LENGTH_PER_KEY) {
    this.maxKeyLength = maxKeyLength;
    this.maxLengthPerKey = maxLengthPerKey;
    this.caches = [];
    for (let i = 0; i < this.maxKeyLength; i++) {
      this.caches.push([]);
    }
  }
  canBeCached(byteLength) {
    return byteLength > 0 && byteLength <= this.maxKeyLength;
  }
  find(bytes, inputOffset, byteLength) {
    const records = this.caches[byteLength - 1];
    FIND_CHUNK: for (const record of records) {
      const recordBytes = record.bytes;
      for (let j = 0; j < byteLength; j++) {
        if (recordBytes[j] !== bytes[inputOffset + j]) {
          continue FIND_CHUNK;
        }
      }
      return record.str;
    }
    return null;
  }
  store(bytes, value) {
    const records = this.caches[bytes.length - 1];
    const record = { bytes, str: value };
    if (records.length >= this.maxLengthPerKey) {
      records[Math.random() * records.length | 0] = record;
    } else {
      records.push(record);
    }
  }
  decode(bytes, inputOffset, byteLength) {
    const cachedValue = this.find(bytes, inputOffset, byteLength);
    if (cachedValue != null) {
      this.hit++;
      return cachedValue;
    }
    this.miss++;
    const str = utf8DecodeJs(bytes, inputOffset, byteLength);
    const slicedCopyOfBytes = Uint8Array.prototype.slice.call(bytes, inputOffset, inputOffset + byteLength);
    this.store(slicedCopyOfBytes, str);
    return str;
  }
};

// node_modules/@msgpack/msgpack/dist.esm/Decoder.mjs
var STATE_ARRAY = "array";
var STATE_MAP_KEY = "map_key";
var STATE_MAP_VALUE = "map_value";
var mapKeyConverter = (key) => {
  if (typeof key === "string" || typeof key === "number") {
    return key;
  }
  throw new DecodeError("The type of key must be string or number but " + typeof key);
};
var StackPool = class {
  stack = [];
  stackHeadPosition = -1;
  get length() {
    return this.stackHeadPosition + 1;
  }
  top() {
    return this.stack[this.stackHeadPosition];
  }
  pushArrayState(size) {
    const state = this.getUninitializedStateFromPool();
    state.type = STATE_ARRAY;
    state.position = 0;
    state.size = size;
    state.array = new Array(size);
  }
  pushMapState(size) {
    const state = this.getUninitializedStateFromPool();
    state.type = STATE_MAP_KEY;
    state.readCount = 0;
    state.size = size;
    state.map = {};
  }
  getUninitializedStateFromPool() {
    this.stackHeadPosition++;
    if (this.stackHeadPosition === this.stack.length) {
      const partialState = {
        type: void 0,
        size: 0,
        array: void 0,
        position: 0,
        readCount: 0,
        map: void 0,
        key: null
      };
      this.stack.push(partialState);
    }
    return this.stack[this.stackHeadPosition];
  }
  release(state) {
    const topStackState = this.stack[this.stackHeadPosition];
    if (topStackState !== state) {
      throw new Error("Invalid stack state. Released state is not on top of the stack.");
    }
    if (state.type === STATE_ARRAY) {
      const partialState = state;
      partialState.size = 0;
      partialState.array = void 0;
      partialState.position = 0;
      partialState.type = void 0;
    }
    if (state.type === STATE_MAP_KEY || state.type === STATE_MAP_VALUE) {
      const partialState = state;
      partialState.size = 0;
      partialState.map = void 0;
      partialState.readCount = 0;
      partialState.type = void 0;
    }
    this.stackHeadPosition--;
  }
  reset() {
    this.stack.length = 0;
    this.stackHeadPosition = -1;
  }
};
var HEAD_BYTE_REQUIRED = -1;
var EMPTY_VIEW = new DataView(new ArrayBuffer(0));
var EMPTY_BYTES = new Uint8Array(EMPTY_VIEW.buffer);
try {
  EMPTY_VIEW.getInt8(0);
} catch (e) {
  if (!(e instanceof RangeError)) {
    throw new Error("This module is not supported in the current JavaScript engine because DataView does not throw RangeError on out-of-bounds access");
  }
}
var MORE_DATA = new RangeError("Insufficient data");
var sharedCachedKeyDecoder = new CachedKeyDecoder();
var Decoder = class _Decoder {
  extensionCodec;
  context;
  useBigInt64;
  rawStrings;
  maxStrLength;
  maxBinLength;
  maxArrayLength;
  maxMapLength;
  maxExtLength;
  keyDecoder;
  mapKeyConverter;
  totalPos = 0;
  pos = 0;
  view = EMPTY_VIEW;
  bytes = EMPTY_BYTES;
  headByte = HEAD_BYTE_REQUIRED;
  stack = new StackPool();
  entered = false;
  constructor(options) {
    this.extensionCodec = options?.extensionCodec ?? ExtensionCodec.defaultCodec;
    this.context = options?.context;
    this.useBigInt64 = options?.useBigInt64 ?? false;
    this.rawStrings = options?.rawStrings ?? false;
    this.maxStrLength = options?.maxStrLength ?? UINT32_MAX;
    this.maxBinLength = options?.maxBinLength ?? UINT32_MAX;
    this.maxArrayLength = options?.maxArrayLength ?? UINT32_MAX;
    this.maxMapLength = options?.maxMapLength ?? UINT32_MAX;
    this.maxExtLength = options?.maxExtLength ?? UINT32_MAX;
    this.keyDecoder = options?.keyDecoder !== void 0 ? options.keyDecoder : sharedCachedKeyDecoder;
    this.mapKeyConverter = options?.mapKeyConverter ?? mapKeyConverter;
  }
  clone() {
    return new _Decoder({
      extensionCodec: this.extensionCodec,
      context: this.context,
      useBigInt64: this.useBigInt64,
      rawStrings: this.rawStrings,
      maxStrLength: this.maxStrLength,
      maxBinLength: this.maxBinLength,
      maxArrayLength: this.maxArrayLength,
      maxMapLength: this.maxMapLength,
      maxExtLength: this.maxExtLength,
      keyDecoder: this.keyDecoder
    });
  }
  reinitializeState() {
    this.totalPos = 0;
    this.headByte = HEAD_BYTE_REQUIRED;
    this.stack.reset();
  }
  setBuffer(buffer) {
    const bytes = ensureUint8Array(buffer);
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = 0;
  }
  appendBuffer(buffer) {
    if (this.headByte === HEAD_BYTE_REQUIRED && !this.hasRemaining(1)) {
      this.setBuffer(buffer);
    } else {
      const remainingData = this.bytes.subarray(this.pos);
      const newData = ensureUint8Array(buffer);
      const newBuffer = new Uint8Array(remainingData.length + newData.length);
      newBuffer.set(remainingData);
      newBuffer.set(newData, remainingData.length);
      this.setBuffer(newBuffer);
    }
  }
  hasRemaining(size) {
    return this.view.byteLength - this.pos >= size;
  }
  createExtraByteError(posToShow) {
    const { view, pos } = this;
    return new RangeError(`Extra ${view.byteLength - pos} of ${view.byteLength} byte(s) found at buffer[${posToShow}]`);
  }
  /**
   * @throws {@link DecodeError}
   * @throws {@link RangeError}
   */
  decode(buffer) {
    if (this.entered) {
      const instance = this.clone();
      return instance.decode(buffer);
    }
    try {
      this.entered = true;
      this.reinitializeState();
      this.setBuffer(buffer);
      const object = this.doDecodeSync();
      if (this.hasRemaining(1)) {
        throw this.createExtraByteError(this.pos);
      }
      return object;
    } finally {
      this.entered = false;
    }
  }
  *decodeMulti(buffer) {
    if (this.entered) {
      const instance = this.clone();
      yield* instance.decodeMulti(buffer);
      return;
    }
    try {
      this.entered = true;
      this.reinitializeState();
      this.setBuffer(buffer);
      while (this.hasRemaining(1)) {
        yield this.doDecodeSync();
      }
    } finally {
      this.entered = false;
    }
  }
  async decodeAsync(stream) {
    if (this.entered) {
      const instance = this.clone();
      return instance.decodeAsync(stream);
    }
    try {
      this.entered = true;
      let decoded = false;
      let object;
      for await (const buffer of stream) {
        if (decoded) {
          this.entered = false;
          throw this.createExtraByteError(this.totalPos);
        }
        this.appendBuffer(buffer);
        try {
          object = this.doDecodeSync();
          decoded = true;
        } catch (e) {
          if (!(e instanceof RangeError)) {
            throw e;
          }
        }
        this.totalPos += this.pos;
      }
      if (decoded) {
        if (this.hasRemaining(1)) {
          throw this.createExtraByteError(this.totalPos);
        }
        return object;
      }
      const { headByte, pos, totalPos } = this;
      throw new RangeError(`Insufficient data in parsing ${prettyByte(headByte)} at ${totalPos} (${pos} in the current buffer)`);
    } finally {
      this.entered = false;
    }
  }
  decodeArrayStream(stream) {
    return this.decodeMultiAsync(stream, true);
  }
  decodeStream(stream) {
    return this.decodeMultiAsync(stream, false);
  }
  async *decodeMultiAsync(stream, isArray) {
    if (this.entered) {
      const instance = this.clone();
      yield* instance.decodeMultiAsync(stream, isArray);
      return;
    }
    try {
      this.entered = true;
      let isArrayHeaderRequired = isArray;
      let arrayItemsLeft = -1;
      for await (const buffer of stream) {
        if (isArray && arrayItemsLeft === 0) {
          throw this.createExtraByteError(this.totalPos);
        }
        this.appendBuffer(buffer);
        if (isArrayHeaderRequired) {
          arrayItemsLeft = this.readArraySize();
          isArrayHeaderRequired = false;
          this.complete();
        }
        try {
          while (true) {
            yield this.doDecodeSync();
            if (--arrayItemsLeft === 0) {
              break;
            }
          }
        } catch (e) {
          if (!(e instanceof RangeError)) {
            throw e;
          }
        }
        this.totalPos += this.pos;
      }
    } finally {
      this.entered = false;
    }
  }
  doDecodeSync() {
    DECODE: while (true) {
      const headByte = this.readHeadByte();
      let object;
      if (headByte >= 224) {
        object = headByte - 256;
      } else if (headByte < 192) {
        if (headByte < 128) {
          object = headByte;
        } else if (headByte < 144) {
          const size = headByte - 128;
          if (size !== 0) {
            this.pushMapState(size);
            this.complete();
            continue DECODE;
          } else {
            object = {};
          }
        } else if (headByte < 160) {
          const size = headByte - 144;
          if (size !== 0) {
            this.pushArrayState(size);
            this.complete();
            continue DECODE;
          } else {
            object = [];
          }
        } else {
          const byteLength = headByte - 160;
          object = this.decodeString(byteLength, 0);
        }
      } else if (headByte === 192) {
        object = null;
      } else if (headByte === 194) {
        object = false;
      } else if (headByte === 195) {
        object = true;
      } else if (headByte === 202) {
        object = this.readF32();
      } else if (headByte === 203) {
        object = this.readF64();
      } else if (headByte === 204) {
        object = this.readU8();
      } else if (headByte === 205) {
        object = this.readU16();
      } else if (headByte === 206) {
        object = this.readU32();
      } else if (headByte === 207) {
        if (this.useBigInt64) {
          object = this.readU64AsBigInt();
        } else {
          object = this.readU64();
        }
      } else if (headByte === 208) {
        object = this.readI8();
      } else if (headByte === 209) {
        object = this.readI16();
      } else if (headByte === 210) {
        object = this.readI32();
      } else if (headByte === 211) {
        if (this.useBigInt64) {
          object = this.readI64AsBigInt();
        } else {
          object = this.readI64();
        }
      } else if (headByte === 217) {
        const byteLength = this.lookU8();
        object = this.decodeString(byteLength, 1);
      } else if (headByte === 218) {
        const byteLength = this.lookU16();
        object = this.decodeString(byteLength, 2);
      } else if (headByte === 219) {
        const byteLength = this.lookU32();
        object = this.decodeString(byteLength, 4);
      } else if (headByte === 220) {
        const size = this.readU16();
        if (size !== 0) {
          this.pushArrayState(size);
          this.complete();
          continue DECODE;
        } else {
          object = [];
        }
      } else if (headByte === 221) {
        const size = this.readU32();
        if (size !== 0) {
          this.pushArrayState(size);
          this.complete();
          continue DECODE;
        } else {
          object = [];
        }
      } else if (headByte === 222) {
        const size = this.readU16();
        if (size !== 0) {
          this.pushMapState(size);
          this.complete();
          continue DECODE;
        } else {
          object = {};
        }
      } else if (headByte === 223) {
        const size = this.readU32();
        if (size !== 0) {
          this.pushMapState(size);
          this.complete();
          continue DECODE;
        } else {
          object = {};
        }
      } else if (headByte === 196) {
        const size = this.lookU8();
        object = this.decodeBinary(size, 1);
      } else if (headByte === 197) {
        const size = this.lookU16();
        object = this.decodeBinary(size, 2);
      } else if (headByte === 198) {
        const size = this.lookU32();
        object = this.decodeBinary(size, 4);
      } else if (headByte === 212) {
        object = this.decodeExtension(1, 0);
      } else if (headByte === 213) {
        object = this.decodeExtension(2, 0);
      } else if (headByte === 214) {
        object = this.decodeExtension(4, 0);
      } else if (headByte === 215) {
        object = this.decodeExtension(8, 0);
      } else if (headByte === 216) {
        object = this.decodeExtension(16, 0);
      } else if (headByte === 199) {
        const size = this.lookU8();
        object = this.decodeExtension(size, 1);
      } else if (headByte === 200) {
        const size = this.lookU16();
        object = this.decodeExtension(size, 2);
      } else if (headByte === 201) {
        const size = this.lookU32();
        object = this.decodeExtension(size, 4);
      } else {
        throw new DecodeError(`Unrecognized type byte: ${prettyByte(headByte)}`);
      }
      this.complete();
      const stack = this.stack;
      while (stack.length > 0) {
        const state = stack.top();
        if (state.type === STATE_ARRAY) {
          state.array[state.position] = object;
          state.position++;
          if (state.position === state.size) {
            object = state.array;
            stack.release(state);
          } else {
            continue DECODE;
          }
        } else if (state.type === STATE_MAP_KEY) {
          if (object === "__proto__") {
            throw new DecodeError("The key __proto__ is not allowed");
          }
          state.key = this.mapKeyConverter(object);
          state.type = STATE_MAP_VALUE;
          continue DECODE;
        } else {
          state.map[state.key] = object;
          state.readCount++;
          if (state.readCount === state.size) {
            object = state.map;
            stack.release(state);
          } else {
            state.key = null;
            state.type = STATE_MAP_KEY;
            continue DECODE;
          }
        }
      }
      return object;
    }
  }
  readHeadByte() {
    if (this.headByte === HEAD_BYTE_REQUIRED) {
      this.headByte = this.readU8();
    }
    return this.headByte;
  }
  complete() {
    this.headByte = HEAD_BYTE_REQUIRED;
  }
  readArraySize() {
    const headByte = this.readHeadByte();
    switch (headByte) {
      case 220:
        return this.readU16();
      case 221:
        return this.readU32();
      default: {
        if (headByte < 160) {
          return headByte - 144;
        } else {
          throw new DecodeError(`Unrecognized array type byte: ${prettyByte(headByte)}`);
        }
      }
    }
  }
  pushMapState(size) {
    if (size > this.maxMapLength) {
      throw new DecodeError(`Max length exceeded: map length (${size}) > maxMapLengthLength (${this.maxMapLength})`);
    }
    this.stack.pushMapState(size);
  }
  pushArrayState(size) {
    if (size > this.maxArrayLength) {
      throw new DecodeError(`Max length exceeded: array length (${size}) > maxArrayLength (${this.maxArrayLength})`);
    }
    this.stack.pushArrayState(size);
  }
  decodeString(byteLength, headerOffset) {
    if (!this.rawStrings || this.stateIsMapKey()) {
      return this.decodeUtf8String(byteLength, headerOffset);
    }
    return this.decodeBinary(byteLength, headerOffset);
  }
  /**
   * @throws {@link RangeError}
   */
  decodeUtf8String(byteLength, headerOffset) {
    if (byteLength > this.maxStrLength) {
      throw new DecodeError(`Max length exceeded: UTF-8 byte length (${byteLength}) > maxStrLength (${this.maxStrLength})`);
    }
    if (this.bytes.byteLength < this.pos + headerOffset + byteLength) {
      throw MORE_DATA;
    }
    const offset = this.pos + headerOffset;
    let object;
    if (this.stateIsMapKey() && this.keyDecoder?.canBeCached(byteLength)) {
      object = this.keyDecoder.decode(this.bytes, offset, byteLength);
    } else {
      object = utf8Decode(this.bytes, offset, byteLength);
    }
    this.pos += headerOffset + byteLength;
    return object;
  }
  stateIsMapKey() {
    if (this.stack.length > 0) {
      const state = this.stack.top();
      return state.type === STATE_MAP_KEY;
    }
    return false;
  }
  /**
   * @throws {@link RangeError}
   */
  decodeBinary(byteLength, headOffset) {
    if (byteLength > this.maxBinLength) {
      throw new DecodeError(`Max length exceeded: bin length (${byteLength}) > maxBinLength (${this.maxBinLength})`);
    }
    if (!this.hasRemaining(byteLength + headOffset)) {
      throw MORE_DATA;
    }
    const offset = this.pos + headOffset;
    const object = this.bytes.subarray(offset, offset + byteLength);
    this.pos += headOffset + byteLength;
    return object;
  }
  decodeExtension(size, headOffset) {
    if (size > this.maxExtLength) {
      throw new DecodeError(`Max length exceeded: ext length (${size}) > maxExtLength (${this.maxExtLength})`);
    }
    const extType = this.view.getInt8(this.pos + headOffset);
    const data = this.decodeBinary(
      size,
      headOffset + 1
      /* extType */
    );
    return this.extensionCodec.decode(data, extType, this.context);
  }
  lookU8() {
    return this.view.getUint8(this.pos);
  }
  lookU16() {
    return this.view.getUint16(this.pos);
  }
  lookU32() {
    return this.view.getUint32(this.pos);
  }
  readU8() {
    const value = this.view.getUint8(this.pos);
    this.pos++;
    return value;
  }
  readI8() {
    const value = this.view.getInt8(this.pos);
    this.pos++;
    return value;
  }
  readU16() {
    const value = this.view.getUint16(this.pos);
    this.pos += 2;
    return value;
  }
  readI16() {
    const value = this.view.getInt16(this.pos);
    this.pos += 2;
    return value;
  }
  readU32() {
    const value = this.view.getUint32(this.pos);
    this.pos += 4;
    return value;
  }
  readI32() {
    const value = this.view.getInt32(this.pos);
    this.pos += 4;
    return value;
  }
  readU64() {
    const value = getUint64(this.view, this.pos);
    this.pos += 8;
    return value;
  }
  readI64() {
    const value = getInt64(this.view, this.pos);
    this.pos += 8;
    return value;
  }
  readU64AsBigInt() {
    const value = this.view.getBigUint64(this.pos);
    this.pos += 8;
    return value;
  }
  readI64AsBigInt() {
    const value = this.view.getBigInt64(this.pos);
    this.pos += 8;
    return value;
  }
  readF32() {
    const value = this.view.getFloat32(this.pos);
    this.pos += 4;
    return value;
  }
  readF64() {
    const value = this.view.getFloat64(this.pos);
    this.pos += 8;
    return value;
  }
};

// node_modules/@msgpack/msgpack/dist.esm/decode.mjs
function decode(buffer, options) {
  const decoder = new Decoder(options);
  return decoder.decode(buffer);
}

// src/errors.ts
var ErrorCode = {
  /** Not MessagePack, or outside the subset toolwire accepts (no extension types, string keys). */
  MALFORMED_FRAME: 101,
  /** A message type this version does not know; the frame was skipped. */
  UNKNOWN_TYPE: 102,
  /** The first message of a connection must be a Configuration. */
  HANDSHAKE_REQUIRED: 103,
  /** The frame exceeds `Limits.maxFrameBytes`. */
  FRAME_TOO_LARGE: 104,
  /** An envelope or body field is missing or has the wrong type or value. */
  INVALID_MESSAGE: 105,
  /** A length, count or depth limit of `Limits` was exceeded. */
  LIMIT_EXCEEDED: 106,
  /** A live connection stays on its conversation (or a frame named another conversation). */
  CONVERSATION_SWITCH_REFUSED: 107,
  /** The server refused too many frames of this principal's connections; it closes the connection. */
  TOO_MANY_REFUSALS: 108,
  /** The conversation to resume does not exist (any more). */
  CONVERSATION_NOT_FOUND: 201,
  /** The conversation belongs to another principal. */
  CONVERSATION_FORBIDDEN: 202,
  /** The principal has as many conversations as the server allows. */
  CONVERSATION_LIMIT: 203,
  /** The named tool is not registered. */
  TOOL_NOT_FOUND: 301,
  /** A ToolUseResult the server does not take: unknown, foreign, answered, or its call was settled without it. */
  RESULT_REFUSED: 302,
  /** A tool did not answer within its deadline. */
  TOOL_TIMEOUT: 304,
  /** No valid credentials were presented. */
  UNAUTHENTICATED: 401,
  /** The credentials do not allow this operation. */
  FORBIDDEN: 403,
  /** The server failed; details stay in its logs. */
  INTERNAL: 501
};
var Severity = { INFO: 0, WARNING: 1, ERROR: 2, CRITICAL: 3 };
var NOT_RECOVERABLE = /* @__PURE__ */ new Set([
  ErrorCode.HANDSHAKE_REQUIRED,
  ErrorCode.CONVERSATION_NOT_FOUND,
  ErrorCode.CONVERSATION_FORBIDDEN,
  ErrorCode.UNAUTHENTICATED,
  ErrorCode.FORBIDDEN
]);
function defaultRecoverable(code) {
  return !NOT_RECOVERABLE.has(code);
}
var ToolwireError = class extends Error {
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
};
var UsageError = class extends ToolwireError {
};
var ProtocolError = class extends ToolwireError {
  /** An `ErrorCode` (any number in the documented ranges). */
  code;
  /** What was wrong, naming the field; sent to the peer. */
  detail;
  /** Whether the connection continues (by default from the code). */
  recoverable;
  /** The stanza id of the refused frame, when it could be read. */
  originatingId;
  constructor(code, detail2, recoverable, originatingId) {
    super(`[${code}] ${detail2}`);
    this.code = code;
    this.detail = detail2;
    this.recoverable = recoverable ?? defaultRecoverable(code);
    this.originatingId = originatingId;
  }
  /** WARNING for an unknown type, ERROR for what a connection survives, CRITICAL otherwise. */
  get severity() {
    if (this.code === ErrorCode.UNKNOWN_TYPE) return Severity.WARNING;
    return this.recoverable ? Severity.ERROR : Severity.CRITICAL;
  }
};
var ConnectionClosed = class extends ToolwireError {
  /** The ErrorMessage code when the server gave one (201 no such conversation, ...). */
  code;
  constructor(message, code) {
    super(message);
    this.code = code;
  }
};
var RegistrationError = class extends ToolwireError {
  group;
  tool;
  constructor(message, group, tool) {
    super(message);
    this.group = group;
    this.tool = tool;
  }
};
var RunFailed = class extends ToolwireError {
  runId;
  /** The ErrorMessage code of a refused message: 105 (a run is in progress), 503 (the server is busy: send it again later). */
  code;
  constructor(message, runId, code) {
    super(message);
    this.runId = runId;
    this.code = code;
  }
};
var ToolError = class extends ToolwireError {
  code;
  terminal;
  needsFollowup;
  constructor(message, options = {}) {
    super(message);
    this.code = options.code ?? "execution_error";
    this.terminal = options.terminal ?? false;
    this.needsFollowup = options.needsFollowup ?? true;
  }
};

// src/wire.ts
var MessageType = {
  ERROR: 1,
  USER_MESSAGE: 2,
  ASSISTANT_MESSAGE: 3,
  TOOL_USE_REQUEST: 6,
  TOOL_USE_RESULT: 7,
  ACKNOWLEDGEMENT: 8,
  CONTROL_STOP: 10,
  CONFIGURATION: 12,
  START_ANSWER: 13,
  ASSISTANT_SENTENCE: 16,
  REGISTER_TOOLS: 100,
  REGISTER_TOOLS_RESULT: 101,
  CONSENT_REQUEST: 102,
  CONSENT_ANSWER: 103,
  RUN_STATUS: 104,
  TOOL_USE_CANCEL: 105
};
function messageTypeName(type) {
  for (const [name, value] of Object.entries(MessageType)) {
    if (value === type) return name;
  }
  return void 0;
}
function kind(value) {
  if (value === null || value === void 0) return "nil";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a float";
  if (typeof value === "string") return "a string";
  if (value instanceof Uint8Array) return "binary";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "a map";
  return typeof value;
}
function isMap(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
function own(map, key) {
  if (!Object.prototype.hasOwnProperty.call(map, key)) return void 0;
  const value = map[key];
  return value === null ? void 0 : value;
}
var Fields = class {
  constructor(body, what) {
    this.body = body;
    this.what = what;
  }
  body;
  what;
  /** Return the 105 error for a field that is not what it should be. */
  refuse(key, expected, value) {
    const got = value === void 0 || value === null ? "missing" : `got ${kind(value)}`;
    return new ProtocolError(ErrorCode.INVALID_MESSAGE, `${this.what}.${key} must be ${expected}, ${got}`);
  }
  /** The raw value of a field, undefined when absent or null. */
  get(key) {
    return own(this.body, key);
  }
  /** Whether a field is present and not null. */
  has(key) {
    return own(this.body, key) !== void 0;
  }
  /** A required string field. */
  text(key, nonEmpty = false) {
    const value = this.get(key);
    if (typeof value !== "string" || nonEmpty && value === "") {
      throw this.refuse(key, nonEmpty ? "a non-empty string" : "a string", value);
    }
    return value;
  }
  /** A string field, `fallback` when absent. */
  textOr(key, fallback) {
    return this.has(key) ? this.text(key) : fallback;
  }
  /** A string field, undefined when absent. */
  optionalText(key) {
    return this.has(key) ? this.text(key) : void 0;
  }
  /** A boolean field; required when `fallback` is undefined. */
  flag(key, fallback) {
    const value = this.get(key);
    if (value === void 0 && fallback !== void 0) return fallback;
    if (typeof value !== "boolean") throw this.refuse(key, "a boolean", value);
    return value;
  }
  /** A boolean field, undefined when absent. */
  optionalFlag(key) {
    return this.has(key) ? this.flag(key) : void 0;
  }
  /** An integer field within [`low`, `high`]; required when `fallback` is undefined. */
  integer(key, fallback, bounds = {}) {
    const value = this.get(key);
    if (value === void 0 && fallback !== void 0) return fallback;
    const { low, high } = bounds;
    if (typeof value !== "number" || !Number.isInteger(value) || low !== void 0 && value < low || high !== void 0 && value > high) {
      const range = low === void 0 ? "" : high === void 0 ? ` ≥ ${low}` : ` in ${low}..${high}`;
      throw this.refuse(key, `an integer${range}`, value);
    }
    return value;
  }
  /** An integer field, undefined when absent. */
  optionalInteger(key, bounds = {}) {
    return this.has(key) ? this.integer(key, void 0, bounds) : void 0;
  }
  /** A string field that must be one of `options`. */
  choice(key, options, fallback) {
    const value = this.get(key);
    if (value === void 0 && fallback !== void 0) return fallback;
    if (typeof value === "string" && options.includes(value)) return value;
    const shown = options.map((option) => `"${option}"`).join(" | ");
    if (typeof value === "string") {
      const quoted = `'${value}'`.slice(0, 40);
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, `${this.what}.${key} must be ${shown}, got ${quoted}`);
    }
    throw this.refuse(key, shown, value);
  }
  /** A map field; required when `fallback` is undefined. */
  mapping(key, fallback) {
    const value = this.get(key);
    if (value === void 0 && fallback !== void 0) return fallback;
    if (!isMap(value)) throw this.refuse(key, "a map", value);
    return value;
  }
  /** A map field, undefined when absent. */
  optionalMapping(key) {
    return this.has(key) ? this.mapping(key) : void 0;
  }
  /** An array of strings; absent means empty. */
  texts(key) {
    return this.array(key, (item) => typeof item === "string", "a string");
  }
  /** An array of maps; absent means empty. */
  mappings(key) {
    return this.array(key, isMap, "a map");
  }
  array(key, check2, expected) {
    const value = this.get(key);
    if (value === void 0) return [];
    if (!Array.isArray(value)) throw this.refuse(key, "an array", value);
    value.forEach((item, index) => {
      if (!check2(item)) {
        const message = `${this.what}.${key}[${index}] must be ${expected}, got ${kind(item)}`;
        throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
      }
    });
    return [...value];
  }
};

// src/messages.ts
var STANZA_MAX = 2 ** 31 - 1;
var DEFAULT_TIMEOUT_MS = 3e4;
var CONVERSATION_IN_BODY = /* @__PURE__ */ new Set([
  MessageType.ERROR,
  MessageType.USER_MESSAGE,
  MessageType.ASSISTANT_MESSAGE,
  MessageType.ACKNOWLEDGEMENT,
  MessageType.START_ANSWER
]);

// src/bodies.ts
var EXECUTIONS = ["server", "client", "either"];
var SCOPES = ["once", "thread"];
var RUN_STATES = ["queued", "started", "finished", "failed"];
var RESULT_TYPES = 5;
function set(entries) {
  const body = {};
  for (const [key, value] of entries) {
    if (value !== void 0 && value !== null) body[key] = value;
  }
  return body;
}
function toBody(message) {
  switch (message.type) {
    case MessageType.ERROR:
      return set([
        ["id", message.id],
        ["code", message.code],
        ["message", message.message],
        ["severity", message.severity ?? Severity.ERROR],
        ["recoverable", message.recoverable ?? true],
        ["originatingId", message.originatingId]
      ]);
    case MessageType.USER_MESSAGE:
    case MessageType.ASSISTANT_MESSAGE:
      return set([
        ["id", message.id],
        ["content", message.content],
        ["previousId", message.previousId]
      ]);
    case MessageType.TOOL_USE_REQUEST:
      return set([
        ["id", message.id],
        ["toolName", message.toolName],
        ["parameters", message.arguments],
        ["execution", message.execution],
        ["timeoutMs", message.timeoutMs ?? DEFAULT_TIMEOUT_MS],
        ["callId", message.callId],
        ["description", message.description],
        ["mode", message.mode]
      ]);
    case MessageType.TOOL_USE_RESULT:
      return set([
        ["id", message.id],
        ["success", message.success],
        ["result", message.result],
        ["errorCode", message.errorCode],
        ["errorMessage", message.errorMessage],
        ["resultType", message.resultType],
        ["needsFollowup", message.needsFollowup],
        ["terminal", message.terminal ? true : void 0],
        ["message", message.message],
        ["content", message.content?.length ? message.content : void 0],
        ["augmentation", message.augmentation]
      ]);
    case MessageType.ACKNOWLEDGEMENT:
      return { acknowledgedStanzaId: message.acknowledgedStanzaId };
    case MessageType.CONTROL_STOP:
      return set([
        ["runId", message.runId],
        ["reason", message.reason]
      ]);
    case MessageType.CONFIGURATION:
      return set([
        ["conversationId", message.conversationId ?? ""],
        ["lastSequenceSeen", message.lastSequenceSeen ?? 0],
        ["clientVersion", message.clientVersion],
        ["device", message.device],
        ["features", message.features ?? []]
      ]);
    case MessageType.START_ANSWER:
      return set([
        ["messageId", message.messageId],
        ["previousId", message.previousId]
      ]);
    case MessageType.ASSISTANT_SENTENCE:
      return set([
        ["messageId", message.messageId],
        ["sequence", message.sequence],
        ["text", message.text],
        ["isFinal", message.isFinal ?? false]
      ]);
    case MessageType.REGISTER_TOOLS:
      return set([
        ["groups", message.groups],
        ["expandedContainers", message.expandedContainers ?? []],
        ["resetClientState", message.resetClientState ?? false]
      ]);
    case MessageType.REGISTER_TOOLS_RESULT:
      return set([
        ["ok", message.ok],
        ["error", message.error],
        ["group", message.group],
        ["tool", message.tool]
      ]);
    case MessageType.CONSENT_REQUEST:
      return set([
        ["id", message.id],
        ["callId", message.callId],
        ["toolName", message.toolName],
        ["mode", message.mode],
        ["reason", message.reason ?? ""],
        ["arguments", message.arguments ?? {}],
        ["description", message.description ?? ""],
        ["allowAlways", message.allowAlways ?? true]
      ]);
    case MessageType.CONSENT_ANSWER:
      return set([
        ["id", message.id],
        ["allow", message.allow],
        ["scope", message.scope ?? "once"],
        ["reason", message.reason]
      ]);
    case MessageType.RUN_STATUS:
      return set([
        ["runId", message.runId],
        ["status", message.status],
        ["reason", message.reason],
        ["detail", message.detail],
        ["output", message.output],
        ["messageId", message.messageId],
        ["position", message.position]
      ]);
    case MessageType.TOOL_USE_CANCEL:
      return set([
        ["id", message.id],
        ["code", message.code],
        ["reason", message.reason]
      ]);
    default:
      return unreachable(message);
  }
}
function envelopeToMap(envelope2) {
  let body = toBody(envelope2.message);
  if (CONVERSATION_IN_BODY.has(envelope2.message.type)) {
    const [first, ...rest] = Object.entries(body);
    body = Object.fromEntries([
      ...first ? [first] : [],
      ["conversationId", envelope2.conversationId],
      ...rest
    ]);
  }
  const wire = {
    stanzaId: envelope2.stanzaId,
    conversationId: envelope2.conversationId,
    type: envelope2.message.type
  };
  if (Object.keys(envelope2.meta).length > 0) wire["meta"] = envelope2.meta;
  wire["body"] = body;
  return wire;
}
function parseBody(type, body) {
  switch (type) {
    case MessageType.ERROR:
      return errorMessage(body);
    case MessageType.USER_MESSAGE:
    case MessageType.ASSISTANT_MESSAGE: {
      const fields = new Fields(body, type === MessageType.USER_MESSAGE ? "UserMessage" : "AssistantMessage");
      return optional({
        type,
        id: fields.text("id", true),
        content: fields.text("content"),
        previousId: fields.optionalText("previousId")
      });
    }
    case MessageType.TOOL_USE_REQUEST:
      return toolUseRequest(body);
    case MessageType.TOOL_USE_RESULT:
      return toolUseResult(body);
    case MessageType.ACKNOWLEDGEMENT: {
      const fields = new Fields(body, "Acknowledgement");
      const bounds = { low: -STANZA_MAX, high: STANZA_MAX };
      const key = fields.has("lastSeenStanzaId") && !fields.has("acknowledgedStanzaId") ? "lastSeenStanzaId" : "acknowledgedStanzaId";
      return { type, acknowledgedStanzaId: fields.integer(key, 0, bounds) };
    }
    case MessageType.CONTROL_STOP: {
      const fields = new Fields(body, "ControlStop");
      return optional({ type, runId: fields.optionalText("runId"), reason: fields.optionalText("reason") });
    }
    case MessageType.CONFIGURATION:
      return configuration(body);
    case MessageType.START_ANSWER: {
      const fields = new Fields(body, "StartAnswer");
      return optional({ type, messageId: fields.text("messageId", true), previousId: fields.optionalText("previousId") });
    }
    case MessageType.ASSISTANT_SENTENCE: {
      const fields = new Fields(body, "AssistantSentence");
      return {
        type,
        messageId: fields.text("messageId", true),
        sequence: fields.integer("sequence", void 0, { low: 0 }),
        text: fields.text("text"),
        isFinal: fields.flag("isFinal", false)
      };
    }
    case MessageType.REGISTER_TOOLS: {
      const fields = new Fields(body, "RegisterTools");
      return {
        type,
        groups: fields.mappings("groups"),
        expandedContainers: fields.texts("expandedContainers"),
        resetClientState: fields.flag("resetClientState", false)
      };
    }
    case MessageType.REGISTER_TOOLS_RESULT: {
      const fields = new Fields(body, "RegisterToolsResult");
      return optional({
        type,
        ok: fields.flag("ok"),
        error: fields.optionalText("error"),
        group: fields.optionalText("group"),
        tool: fields.optionalText("tool")
      });
    }
    case MessageType.CONSENT_REQUEST: {
      const fields = new Fields(body, "ConsentRequest");
      return {
        type,
        id: fields.text("id", true),
        callId: fields.text("callId", true),
        toolName: fields.text("toolName", true),
        mode: fields.text("mode"),
        reason: fields.textOr("reason", ""),
        arguments: fields.mapping("arguments", {}),
        description: fields.textOr("description", ""),
        allowAlways: fields.flag("allowAlways", true)
      };
    }
    case MessageType.CONSENT_ANSWER: {
      const fields = new Fields(body, "ConsentAnswer");
      return optional({
        type,
        id: fields.text("id", true),
        allow: fields.flag("allow"),
        scope: fields.choice("scope", SCOPES, "once"),
        reason: fields.optionalText("reason")
      });
    }
    case MessageType.RUN_STATUS: {
      const fields = new Fields(body, "RunStatus");
      return optional({
        type,
        runId: fields.text("runId", true),
        status: fields.choice("status", RUN_STATES),
        reason: fields.optionalText("reason"),
        detail: fields.optionalText("detail"),
        output: fields.optionalText("output"),
        messageId: fields.optionalText("messageId"),
        position: fields.optionalInteger("position", { low: 1 })
      });
    }
    case MessageType.TOOL_USE_CANCEL: {
      const fields = new Fields(body, "ToolUseCancel");
      return optional({
        type,
        id: fields.text("id", true),
        code: fields.text("code"),
        reason: fields.optionalText("reason")
      });
    }
    default:
      throw new ProtocolError(ErrorCode.UNKNOWN_TYPE, `unknown message type ${type}; the message was skipped`);
  }
}
function errorMessage(body) {
  const fields = new Fields(body, "ErrorMessage");
  let message = fields.textOr("message", "");
  let code = fields.get("code");
  if (typeof code === "string") {
    if (/^[0-9]{1,5}$/.test(code)) {
      code = Number(code);
    } else {
      message = `${code}: ${message}`;
      code = 0;
    }
  }
  const origin = fields.get("originatingId");
  if (origin !== void 0 && typeof origin !== "string" && !(typeof origin === "number" && Number.isInteger(origin))) {
    throw fields.refuse("originatingId", "an integer or a string", origin);
  }
  return optional({
    type: MessageType.ERROR,
    id: fields.textOr("id", ""),
    code: new Fields({ code }, "ErrorMessage").integer("code", void 0, { low: 0, high: 65535 }),
    message,
    severity: fields.integer("severity", Severity.ERROR, { low: 0, high: 3 }),
    recoverable: fields.flag("recoverable", true),
    originatingId: origin
  });
}
function toolUseRequest(body) {
  const fields = new Fields(body, "ToolUseRequest");
  const key = fields.has("parameters") || !fields.has("arguments") ? "parameters" : "arguments";
  return optional({
    type: MessageType.TOOL_USE_REQUEST,
    id: fields.text("id", true),
    toolName: fields.text("toolName", true),
    arguments: fields.mapping(key),
    execution: fields.choice("execution", EXECUTIONS),
    timeoutMs: fields.integer("timeoutMs", DEFAULT_TIMEOUT_MS, { low: 1, high: STANZA_MAX }),
    callId: fields.optionalText("callId"),
    description: fields.optionalText("description"),
    mode: fields.optionalText("mode")
  });
}
function toolUseResult(body) {
  const fields = new Fields(body, "ToolUseResult");
  const success2 = fields.flag("success");
  const resultType = fields.optionalInteger("resultType", { low: 0, high: RESULT_TYPES - 1 });
  if (resultType !== void 0 && resultType === 0 !== success2) {
    const message = `ToolUseResult.resultType ${resultType} contradicts success=${success2}`;
    throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
  }
  const content = fields.mappings("content");
  content.forEach((item, index) => checkItem(new Fields(item, `ToolUseResult.content[${index}]`), item));
  return optional({
    type: MessageType.TOOL_USE_RESULT,
    // A dialect names the request `requestId`; it wins when present.
    id: fields.text(fields.has("requestId") ? "requestId" : "id", true),
    success: success2,
    result: fields.optionalMapping("result"),
    errorCode: fields.optionalText("errorCode"),
    errorMessage: errorText(fields, success2),
    resultType,
    needsFollowup: fields.optionalFlag("needsFollowup"),
    terminal: fields.flag("terminal", false),
    message: fields.optionalText("message"),
    content,
    augmentation: fields.optionalMapping("augmentation")
  });
}
function errorText(fields, success2) {
  const message = fields.optionalText("errorMessage");
  const error = fields.get("error");
  return message === void 0 && !success2 && typeof error === "string" ? error : message;
}
function checkItem(fields, item) {
  switch (fields.choice("type", ["text", "json", "binary"])) {
    case "text":
      fields.text("text");
      return;
    case "json":
      if (!Object.prototype.hasOwnProperty.call(item, "value")) throw fields.refuse("value", "present (any value)", void 0);
      return;
    case "binary": {
      fields.text("mimeType", true);
      const data = fields.get("data");
      if (!(data instanceof Uint8Array)) throw fields.refuse("data", "binary (MessagePack bin)", data);
      fields.optionalText("filename");
      return;
    }
  }
}
function configuration(body) {
  const fields = new Fields(body, "Configuration");
  const features = fields.get("features");
  let chosen;
  if (isMap(features)) {
    chosen = Object.keys(features).filter((name) => own(features, name) === true);
  } else {
    chosen = fields.texts("features");
  }
  return optional({
    type: MessageType.CONFIGURATION,
    conversationId: fields.textOr("conversationId", ""),
    lastSequenceSeen: fields.integer("lastSequenceSeen", 0, { low: 0, high: STANZA_MAX }),
    clientVersion: fields.optionalText("clientVersion"),
    device: fields.optionalText("device"),
    features: chosen
  });
}
function optional(message) {
  for (const key of Object.keys(message)) {
    if (message[key] === void 0) delete message[key];
  }
  return message;
}
function unreachable(value) {
  throw new Error(`unexpected message ${JSON.stringify(value)}`);
}

// src/codec.ts
var MiB = 1024 * 1024;
var INT32 = 2 ** 31 - 1;
var TRACE_FIELDS = [
  ["trace_id", "messaging.trace_id"],
  ["span_id", "messaging.span_id"]
];
var DEFAULT_LIMITS = Object.freeze({
  maxFrameBytes: MiB,
  maxStrLen: MiB,
  maxBinLen: MiB,
  maxArrayLen: 65536,
  maxMapLen: 65536,
  maxContainers: 65536,
  maxDepth: 32
});
var Frame = class {
  constructor(stanzaId, conversationId, type, meta, body) {
    this.stanzaId = stanzaId;
    this.conversationId = conversationId;
    this.type = type;
    this.meta = meta;
    this.body = body;
  }
  stanzaId;
  conversationId;
  type;
  meta;
  body;
  /**
   * Read the body into its message.
   *
   * @throws ProtocolError 102 for an unknown type, 105 for a bad field; `originatingId` is the stanza id.
   */
  open() {
    let message;
    let conversationId;
    try {
      message = parseBody(this.type, this.body);
      conversationId = this.bodyConversation(message);
    } catch (error) {
      const origin = this.stanzaId || void 0;
      if (error instanceof ProtocolError) throw new ProtocolError(error.code, error.detail, error.recoverable, origin);
      throw new ProtocolError(ErrorCode.INTERNAL, "the message could not be read", true, origin);
    }
    return { stanzaId: this.stanzaId, conversationId, message, meta: this.meta };
  }
  bodyConversation(message) {
    const inBody = own(this.body, "conversationId");
    if (!CONVERSATION_IN_BODY.has(message.type) || inBody === void 0 || inBody === this.conversationId) {
      return this.conversationId;
    }
    if (typeof inBody !== "string") {
      refuse(ErrorCode.INVALID_MESSAGE, `body.conversationId must be a string, got ${kind(inBody)}`);
    }
    if (this.conversationId) {
      refuse(ErrorCode.INVALID_MESSAGE, "body.conversationId differs from the envelope's conversationId");
    }
    return inBody;
  }
};
function encode2(envelope2) {
  return packValue(envelopeToMap(envelope2));
}
function packValue(value) {
  return encode(value, { ignoreUndefined: true });
}
function decode2(data, limits = DEFAULT_LIMITS) {
  return readFrame(data, limits).open();
}
function readFrame(data, limits = DEFAULT_LIMITS) {
  if (!(data instanceof Uint8Array)) refuse(ErrorCode.MALFORMED_FRAME, `a frame must be bytes, got ${kind(data)}`);
  if (data.byteLength > limits.maxFrameBytes) {
    refuse(ErrorCode.FRAME_TOO_LARGE, `frame of ${data.byteLength} bytes exceeds the limit of ${limits.maxFrameBytes}`);
  }
  const root = unpackValue(data, limits);
  return envelope(root);
}
var ABSENT = /* @__PURE__ */ Symbol("undefined");
var UNDEFINED = new ExtensionCodec();
UNDEFINED.register({ type: 0, encode: () => null, decode: () => ABSENT });
function unpackValue(data, limits = DEFAULT_LIMITS) {
  const undefinedValues = check(data, limits);
  let value;
  try {
    value = decode(data, {
      maxStrLength: limits.maxStrLen,
      maxBinLength: limits.maxBinLen,
      maxArrayLength: limits.maxArrayLen,
      maxMapLength: limits.maxMapLen,
      maxExtLength: 1,
      extensionCodec: UNDEFINED
    });
  } catch {
    return refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value");
  }
  return undefinedValues > 0 ? place(value) : value;
}
function place(root) {
  if (root === ABSENT) return null;
  const stack = [root];
  for (let node = stack.pop(); node !== void 0; node = stack.pop()) {
    if (Array.isArray(node)) {
      node.forEach((item, index) => {
        if (item === ABSENT) node[index] = null;
        else stack.push(item);
      });
    } else if (isMap(node)) {
      for (const [key, item] of Object.entries(node)) {
        if (item === ABSENT) delete node[key];
        else stack.push(item);
      }
    }
  }
  return root;
}
function check(data, limits = DEFAULT_LIMITS) {
  return new Scanner(data, limits).run();
}
var utf8 = new TextDecoder("utf-8", { fatal: true });
var Scanner = class {
  constructor(data, limits) {
    this.data = data;
    this.limits = limits;
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  data;
  limits;
  pos = 0;
  containers = 0;
  /** How many `undefined` values were read. */
  undefinedValues = 0;
  view;
  stack = [];
  run() {
    do {
      this.value();
      this.close();
    } while (this.stack.length > 0);
    if (this.pos !== this.data.byteLength) refuse(ErrorCode.MALFORMED_FRAME, "trailing bytes after the MessagePack value");
    return this.undefinedValues;
  }
  /** Pop the containers whose items were all read. */
  close() {
    let top = this.stack[this.stack.length - 1];
    while (top !== void 0 && top.left === 0) {
      this.stack.pop();
      top = this.stack[this.stack.length - 1];
    }
  }
  value() {
    const top = this.stack[this.stack.length - 1];
    const isKey = top?.keys !== void 0 && top.left % 2 === 0;
    if (top !== void 0) top.left -= 1;
    const byte = this.u8();
    if (isKey) {
      this.key(byte, top.keys);
      return;
    }
    if (byte <= 127 || byte >= 224 || byte === 192 || byte === 194 || byte === 195) return;
    if ((byte & 240) === 128) return this.open(byte & 15, true);
    if ((byte & 240) === 144) return this.open(byte & 15, false);
    if ((byte & 224) === 160) return this.string(byte & 31);
    switch (byte) {
      case 196:
      case 197:
      case 198: {
        const size = this.length(byte - 196);
        if (size > this.limits.maxBinLen) limit(`${size} exceeds max_bin_len(${this.limits.maxBinLen})`);
        this.skip(size);
        return;
      }
      case 202:
        return this.skip(4);
      case 203:
        return this.skip(8);
      case 204:
      case 205:
      case 206:
      case 207:
        return this.skip(1 << byte - 204);
      case 208:
      case 209:
      case 210:
      case 211:
        return this.skip(1 << byte - 208);
      case 217:
      case 218:
      case 219:
        return this.string(this.length(byte - 217));
      case 220:
      case 221:
        return this.open(this.length(byte - 220 + 1), false);
      case 222:
      case 223:
        return this.open(this.length(byte - 222 + 1), true);
      case 212:
      // fixext 1: `d4 00 00` is msgpackr's undefined
      case 199:
        if (this.undefined(byte === 212 ? [0, 0] : [1, 0, 0])) return;
        return refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted");
      case 200:
      case 201:
      case 213:
      case 214:
      case 215:
      case 216:
        return refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted");
      default:
        return refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value (truncated, or invalid bytes)");
    }
  }
  /** Read the rest of an `undefined` (`rest`: the bytes after the marker) if it is one. */
  undefined(rest) {
    if (this.pos + rest.length > this.data.byteLength) return false;
    if (rest.some((expected, offset) => this.data[this.pos + offset] !== expected)) return false;
    this.pos += rest.length;
    this.undefinedValues += 1;
    return true;
  }
  key(byte, keys) {
    let size;
    if ((byte & 224) === 160) size = byte & 31;
    else if (byte >= 217 && byte <= 219) size = this.length(byte - 217);
    else return refuse(ErrorCode.MALFORMED_FRAME, "map keys must be strings");
    const key = this.text(size);
    if (key === "__proto__") refuse(ErrorCode.MALFORMED_FRAME, "the map key __proto__ is not accepted");
    if (keys.has(key)) refuse(ErrorCode.MALFORMED_FRAME, "a map repeats a key");
    keys.add(key);
  }
  string(size) {
    this.text(size);
  }
  text(size) {
    if (size > this.limits.maxStrLen) limit(`${size} exceeds max_str_len(${this.limits.maxStrLen})`);
    const end = this.pos + size;
    if (end > this.data.byteLength) truncated();
    try {
      return utf8.decode(this.data.subarray(this.pos, this.pos = end));
    } catch {
      return refuse(ErrorCode.MALFORMED_FRAME, "a string is not valid UTF-8");
    }
  }
  open(size, map) {
    const max = map ? this.limits.maxMapLen : this.limits.maxArrayLen;
    if (size > max) limit(`${size} exceeds ${map ? "max_map_len" : "max_array_len"}(${max})`);
    this.containers += 1;
    if (this.containers > this.limits.maxContainers) limit("too many maps and arrays in one frame");
    if (this.stack.length + 1 > this.limits.maxDepth) limit(`maps and arrays nested deeper than ${this.limits.maxDepth}`);
    if (size > 0) this.stack.push({ left: map ? size * 2 : size, keys: map ? /* @__PURE__ */ new Set() : void 0 });
  }
  /** Read a big-endian length of 1, 2 or 4 bytes (`width` 0, 1, 2). */
  length(width) {
    const bytes = 1 << width;
    if (this.pos + bytes > this.data.byteLength) truncated();
    const at = this.pos;
    this.pos += bytes;
    if (bytes === 1) return this.view.getUint8(at);
    if (bytes === 2) return this.view.getUint16(at);
    return this.view.getUint32(at);
  }
  u8() {
    if (this.pos >= this.data.byteLength) truncated();
    return this.data[this.pos++];
  }
  skip(bytes) {
    if (this.pos + bytes > this.data.byteLength) truncated();
    this.pos += bytes;
  }
};
function envelope(root) {
  if (!isMap(root)) refuse(ErrorCode.INVALID_MESSAGE, `a frame must be a map (the envelope), got ${kind(root)}`);
  const wire = root;
  const stanzaId = own(wire, "stanzaId") ?? 0;
  if (typeof stanzaId !== "number" || !Number.isInteger(stanzaId) || stanzaId < -INT32 || stanzaId > INT32) {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.stanzaId must be an int32, got ${kind(stanzaId)}`);
  }
  const conversationId = own(wire, "conversationId") ?? "";
  if (typeof conversationId !== "string") {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.conversationId must be a string, got ${kind(conversationId)}`);
  }
  const type = own(wire, "type");
  if (typeof type !== "number" || !Number.isInteger(type) || type < 0 || type > 65535) {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.type must be a uint16, got ${kind(type)}`, stanzaId);
  }
  let meta = mapField(wire, "meta", stanzaId);
  const body = mapField(wire, "body", stanzaId);
  for (const [top, inside] of TRACE_FIELDS) {
    if (Object.prototype.hasOwnProperty.call(wire, top) && !Object.prototype.hasOwnProperty.call(meta, inside)) {
      meta = { ...meta, [inside]: wire[top] };
    }
  }
  return new Frame(stanzaId, conversationId, type, meta, body);
}
function mapField(wire, name, stanzaId) {
  const value = own(wire, name);
  if (value === void 0) return {};
  if (!isMap(value)) refuse(ErrorCode.INVALID_MESSAGE, `envelope.${name} must be a map, got ${kind(value)}`, stanzaId);
  return value;
}
function refuse(code, message, stanzaId = 0) {
  throw new ProtocolError(code, message, void 0, stanzaId || void 0);
}
function limit(message) {
  refuse(ErrorCode.LIMIT_EXCEEDED, message);
}
function truncated() {
  refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value (truncated, or invalid bytes)");
}

// src/sequencing.ts
function sequencingToJSON(state) {
  return {
    role: state.role,
    conversationId: state.conversationId,
    nextStanza: state.nextStanza,
    lastSeen: state.lastSeen,
    outbox: state.outbox.map(([stanza, frame]) => [stanza, toBase64(frame)])
  };
}
function sequencingFromJSON(data) {
  const value = data;
  const integer = (n) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  if (typeof value !== "object" || value === null || value.role !== "client" && value.role !== "server" || typeof value.conversationId !== "string" || !integer(value.nextStanza) || !integer(value.lastSeen) || !Array.isArray(value.outbox)) {
    throw new UsageError("not a Sequencing state: expected {role, conversationId, nextStanza, lastSeen, outbox}");
  }
  const outbox = value.outbox.map((entry) => {
    if (!Array.isArray(entry) || !integer(entry[0]) || typeof entry[1] !== "string") {
      throw new UsageError("not a Sequencing state: outbox entries are [stanza, base64 frame]");
    }
    return [entry[0], fromBase64(entry[1])];
  });
  return { ...value, outbox };
}
var Sequencer = class {
  constructor(conversationId, maxOutbox, state) {
    this.maxOutbox = maxOutbox;
    this.conversationId = state === void 0 ? conversationId : state.conversationId;
    this.next = state?.nextStanza ?? 1;
    this.lastSeen = state?.lastSeen ?? 0;
    this.acked = this.lastSeen;
    this.outbox = new Map(state?.outbox ?? []);
  }
  maxOutbox;
  conversationId;
  next;
  lastSeen;
  /** The last stanza seen that an Acknowledgement has covered. */
  acked;
  outbox;
  /** Return the state to persist, or undefined before a conversation is bound. */
  export(role) {
    if (this.conversationId === void 0) return void 0;
    return {
      role,
      conversationId: this.conversationId,
      nextStanza: this.next,
      lastSeen: this.lastSeen,
      outbox: [...this.outbox.entries()]
    };
  }
  /** Record a frame sent under the stanza number `next`, and move on to the following one. */
  keep(frame) {
    this.outbox.set(this.next, frame);
    this.next += 1;
    while (this.outbox.size > this.maxOutbox) {
      this.outbox.delete(this.outbox.keys().next().value);
    }
  }
  /** Record a peer's stanza as processed; false when it is a duplicate. */
  see(stanza) {
    if (Math.abs(stanza) <= this.lastSeen) return false;
    this.lastSeen = Math.abs(stanza);
    return true;
  }
  /**
   * Drop the frames up to stanza `upto` (absolute) from the outbox.
   *
   * @throws ProtocolError 105 when `upto` was never sent.
   */
  acknowledged(upto) {
    if (upto >= this.next) {
      const message = `Acknowledgement of stanza ${upto}, which was never sent (the last is ${this.next - 1})`;
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
    }
    for (const stanza of [...this.outbox.keys()]) {
      if (stanza <= upto) this.outbox.delete(stanza);
    }
  }
  /** Return the frames after the peer's `lastSequenceSeen`, dropping those it has seen. */
  replayAfter(peerSeen) {
    this.acknowledged(Math.min(peerSeen, this.next - 1));
    this.next = Math.max(this.next, peerSeen + 1);
    return [...this.outbox.values()];
  }
  /** How many stanzas were seen since the last acknowledgement. */
  unacknowledged() {
    return this.lastSeen - this.acked;
  }
};
function toBase64(bytes) {
  let text = "";
  for (let at = 0; at < bytes.length; at += 32768) {
    text += String.fromCharCode(...bytes.subarray(at, at + 32768));
  }
  return btoa(text);
}
function fromBase64(text) {
  let binary;
  try {
    binary = atob(text);
  } catch {
    throw new UsageError("not base64");
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// src/connection.ts
var UNNUMBERED = /* @__PURE__ */ new Set([MessageType.CONFIGURATION, MessageType.ACKNOWLEDGEMENT]);
function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
function received(messages = [], replies = [], close = false, errors = []) {
  return { messages, replies, close, errors };
}
var Connection = class _Connection {
  role;
  limits;
  ackEvery;
  maxOutbox;
  newId;
  sign;
  phase = "handshake";
  seq;
  requested;
  helloReceived;
  constructor(role, options = {}) {
    const { state } = options;
    if (state !== void 0 && state.role !== role) {
      throw new UsageError(`a ${state.role} state cannot resume a ${role} connection`);
    }
    this.role = role;
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.ackEvery = options.ackEvery ?? 32;
    this.maxOutbox = options.maxOutbox ?? 1e4;
    this.newId = options.newId ?? (() => newId("err"));
    this.sign = role === "client" ? 1 : -1;
    this.seq = new Sequencer(void 0, this.maxOutbox, state);
  }
  /**
   * Continue a conversation from exported state, e.g. after a reconnect or a page reload.
   *
   * `send()` on a resumed connection keeps frames in the outbox (and returns empty bytes) until a
   * handshake replays them.
   */
  static resume(state, options = {}) {
    return new _Connection(state.role, { ...options, state });
  }
  /** The conversation this end is bound to, once known. */
  get conversationId() {
    return this.seq.conversationId;
  }
  /** True between a completed handshake and a close. */
  get isOpen() {
    return this.phase === "open";
  }
  /** True after a non-recoverable error; `receive()` then ignores everything. */
  get closed() {
    return this.phase === "closed";
  }
  /** The absolute id of the last numbered stanza this end sent (0 before any). */
  get lastStanza() {
    return this.seq.next - 1;
  }
  /** Export the sequencing state to persist (undefined before a conversation is bound). */
  state() {
    return this.seq.export(this.role);
  }
  // -- handshake ------------------------------------------------------------------------------
  /**
   * Client: return the Configuration that opens the connection; write it first.
   *
   * @param conversationId The conversation to resume; defaults to the resumed state's, else new.
   */
  hello(conversationId, options = {}) {
    this.require("client", "hello");
    const requested = conversationId ?? this.seq.conversationId ?? "";
    if (requested !== this.seq.conversationId) {
      this.seq = new Sequencer(requested || void 0, this.maxOutbox);
    }
    this.requested = requested;
    const hello = {
      type: MessageType.CONFIGURATION,
      conversationId: requested,
      lastSequenceSeen: this.seq.lastSeen,
      ...options.clientVersion !== void 0 && { clientVersion: options.clientVersion },
      ...options.device !== void 0 && { device: options.device },
      features: options.features ?? []
    };
    return encode2({ stanzaId: 0, conversationId: requested, message: hello, meta: {} });
  }
  /**
   * Server: bind the conversation the client's Configuration asked for, or a new one.
   *
   * @returns the frames to write: the server's Configuration, then the frames the client missed.
   */
  accept(conversationId, options = {}) {
    this.require("server", "accept");
    if (this.phase !== "accepting" || this.helloReceived === void 0) {
      throw new UsageError("accept() answers a client's Configuration: call it after receive() surfaced one");
    }
    const { state } = options;
    if (state !== void 0 && state.conversationId !== conversationId) {
      throw new UsageError(`the state is for conversation '${state.conversationId}', not '${conversationId}'`);
    }
    if (state !== void 0 || this.seq.conversationId !== conversationId) {
      this.seq = new Sequencer(conversationId, this.maxOutbox, state);
    }
    const hello = this.helloReceived;
    const peerSeen = hello.conversationId ? hello.lastSequenceSeen ?? 0 : 0;
    const answer = {
      type: MessageType.CONFIGURATION,
      conversationId,
      lastSequenceSeen: this.seq.lastSeen,
      features: options.features ?? []
    };
    this.phase = "open";
    return [encode2({ stanzaId: 0, conversationId, message: answer, meta: {} }), ...this.seq.replayAfter(peerSeen)];
  }
  /** Server: return a non-recoverable ErrorMessage (e.g. 201, 202, 401) and close this connection. */
  refuse(code, message) {
    this.phase = "closed";
    return this.errorFrame(new ProtocolError(code, message, false));
  }
  // -- sending --------------------------------------------------------------------------------
  /**
   * Number a message, keep it until acknowledged, and return the frame to write.
   *
   * @returns the frame; empty while the connection is not open (the frame then waits in the
   *   outbox and goes out with the next handshake's replay).
   * @throws UsageError no conversation is bound yet, or the message is one the connection writes itself.
   * @throws ProtocolError 104 when the frame exceeds `limits.maxFrameBytes`; nothing was sent.
   */
  send(message, meta = {}) {
    if (UNNUMBERED.has(message.type)) {
      throw new UsageError("Configuration and Acknowledgement are written by hello(), accept() and ack(), not send()");
    }
    const conversationId = this.seq.conversationId;
    if (conversationId === void 0) {
      throw new UsageError("no conversation yet: send after the handshake, or resume a state");
    }
    const frame = encode2({ stanzaId: this.sign * this.seq.next, conversationId, message, meta });
    if (frame.byteLength > this.limits.maxFrameBytes) {
      throw new ProtocolError(ErrorCode.FRAME_TOO_LARGE, `a frame of ${frame.byteLength} bytes exceeds the limit`);
    }
    this.seq.keep(frame);
    return this.phase === "open" ? frame : new Uint8Array(0);
  }
  /** How many stanzas were seen since the last Acknowledgement this end wrote. */
  get unacknowledged() {
    return this.seq.unacknowledged();
  }
  /**
   * Return a cumulative Acknowledgement of every stanza seen, or undefined if nothing is new.
   *
   * @param upto acknowledge only up to this stanza (absolute value), e.g. the last one whose
   *   effects are persisted; every stanza seen by default.
   */
  ack(upto) {
    const seq = this.seq;
    const last = upto === void 0 ? seq.lastSeen : Math.min(Math.abs(upto), seq.lastSeen);
    if (this.phase !== "open" || seq.conversationId === void 0 || last <= seq.acked) return void 0;
    seq.acked = last;
    const message = { type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: -this.sign * last };
    return encode2({ stanzaId: 0, conversationId: seq.conversationId, message, meta: {} });
  }
  // -- receiving ------------------------------------------------------------------------------
  /** Take one frame from the peer; never throws for anything the peer sends. */
  receive(data) {
    if (this.phase === "closed") return received();
    const replies = [];
    if (this.phase === "open" && this.seq.unacknowledged() >= this.ackEvery) {
      const ack = this.ack();
      if (ack !== void 0) replies.push(ack);
    }
    try {
      const frame = readFrame(data, this.limits);
      return this.phase !== "open" ? this.handshake(frame, replies) : this.opened(frame, replies);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      if (this.phase !== "open") {
        error.recoverable = false;
      }
      if (!error.recoverable) this.phase = "closed";
      return received([], [...replies, this.errorFrame(error)], !error.recoverable, [error]);
    }
  }
  opened(frame, replies) {
    const numbered = frame.stanzaId !== 0 && !UNNUMBERED.has(frame.type);
    if (numbered) {
      if (frame.stanzaId * this.sign > 0) {
        const peer = this.role === "client" ? "server" : "client";
        const message2 = `envelope.stanzaId ${frame.stanzaId} has the wrong sign for a ${peer} message`;
        throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message2, void 0, frame.stanzaId);
      }
      if (!this.seq.see(frame.stanzaId)) return received([], replies);
    }
    if (frame.type === MessageType.CONFIGURATION) {
      const message2 = `this connection is bound to conversation '${this.seq.conversationId}'; open a new one`;
      throw new ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message2);
    }
    const envelope2 = frame.open();
    const message = envelope2.message;
    if (message.type === MessageType.ACKNOWLEDGEMENT) {
      this.seq.acknowledged(Math.abs(message.acknowledgedStanzaId));
      return received([], replies);
    }
    if (message.type === MessageType.ERROR && message.recoverable === false) {
      this.phase = "closed";
      return received([envelope2], replies, true);
    }
    return received([envelope2], replies);
  }
  handshake(frame, replies) {
    if (this.phase === "accepting") {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "wait for the server's Configuration before sending");
    }
    if (frame.type !== MessageType.CONFIGURATION && frame.type !== MessageType.ERROR || frame.type === MessageType.ERROR && this.role === "server") {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration");
    }
    const envelope2 = frame.open();
    const message = envelope2.message;
    if (message.type === MessageType.ERROR) {
      const recoverable = message.recoverable !== false;
      if (!recoverable) this.phase = "closed";
      return received([envelope2], replies, !recoverable);
    }
    if (message.type !== MessageType.CONFIGURATION) {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration");
    }
    if (this.role === "server") {
      this.helloReceived = message;
      this.phase = "accepting";
      return received([envelope2], replies);
    }
    return received([envelope2], [...replies, ...this.answered(message)]);
  }
  /** Client: the server bound a conversation; resend what it has not seen. */
  answered(config) {
    const bound = config.conversationId ?? "";
    if (!bound) {
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, "the server's Configuration must name the conversation");
    }
    if (this.requested && bound !== this.requested) {
      const message = `asked to resume '${this.requested}', the server bound '${bound}'`;
      throw new ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message, false);
    }
    if (this.seq.conversationId !== bound) this.seq = new Sequencer(bound, this.maxOutbox);
    this.phase = "open";
    return this.seq.replayAfter(config.lastSequenceSeen ?? 0);
  }
  require(role, method) {
    if (this.role !== role) throw new UsageError(`${method}() is for the ${role} end of a connection`);
  }
  errorFrame(error) {
    const message = {
      type: MessageType.ERROR,
      id: this.newId(),
      code: error.code,
      message: error.detail,
      severity: error.severity,
      recoverable: error.recoverable,
      ...error.originatingId !== void 0 && { originatingId: error.originatingId }
    };
    return encode2({ stanzaId: 0, conversationId: this.seq.conversationId ?? "", message, meta: {} });
  }
};

// src/events.ts
function streamEvent(message) {
  switch (message.type) {
    case MessageType.START_ANSWER: {
      const { messageId, previousId } = message;
      return { kind: "answerStarted", messageId, ...previousId !== void 0 && { previousId } };
    }
    case MessageType.ASSISTANT_SENTENCE: {
      const { messageId, sequence, text } = message;
      return { kind: "answerText", messageId, sequence, text, isFinal: message.isFinal ?? false };
    }
    case MessageType.ASSISTANT_MESSAGE: {
      const { id, content, previousId } = message;
      return { kind: "assistantMessage", id, content, ...previousId !== void 0 && { previousId } };
    }
    case MessageType.RUN_STATUS: {
      const { runId, reason, detail: detail2, output, messageId } = message;
      const answering = messageId === void 0 ? {} : { messageId };
      if (message.status === "started") return { kind: "runStarted", runId, ...answering };
      if (message.status === "queued") return { kind: "runQueued", runId, position: message.position ?? 1, ...answering };
      if (message.status === "failed") {
        return { kind: "runFailed", runId, ...answering, message: `the run failed: ${detail2 ?? "no reason given"}` };
      }
      return {
        kind: "runFinished",
        runId,
        ...answering,
        ...reason !== void 0 && { reason },
        ...detail2 !== void 0 && { detail: detail2 },
        ...output !== void 0 && { output }
      };
    }
  }
}
var Run = class {
  /** @internal */
  constructor(stanzaId, messageId) {
    this.stanzaId = stanzaId;
    this.messageId = messageId;
    this.finished = new Promise((resolve, reject) => this.settle = { resolve, reject });
    this.finished.catch(() => {
    });
  }
  stanzaId;
  messageId;
  /** Resolves with the `runFinished` event; rejects with `RunFailed` or `ConnectionClosed`. */
  finished;
  /** The server's id for the run, once it started. */
  runId;
  queue = [];
  wake;
  outcome;
  settle;
  /** True once the run finished or failed. */
  get done() {
    return this.outcome !== void 0;
  }
  /**
   * @internal Take an event if it belongs to this run: from the `runStarted` that names its
   * message (or names none, from an older server) to its `runFinished` or `runFailed`, or the
   * refusal of its message. Events of an earlier run, replayed after a reload, are not its own. A
   * `runStarted` naming no message while it is in progress is its resumption (a restarted server,
   * another replica): its end is this run's end.
   */
  offer(event) {
    if (this.outcome !== void 0 || event.kind === "connection" || event.kind === "warning") return;
    if (this.runId === void 0) {
      const opening = event.kind === "runQueued" || event.kind === "runStarted";
      if (opening && (event.messageId === void 0 || event.messageId === this.messageId)) {
        this.runId = event.runId;
        this.push(event);
      } else if (event.kind === "runFailed" && event.runId === void 0) {
        this.push(event);
        this.fail(new RunFailed(event.message, void 0, event.code));
      }
      return;
    }
    if ((event.kind === "runQueued" || event.kind === "runStarted") && event.messageId === void 0) {
      this.runId = event.runId;
    } else if ((event.kind === "runFinished" || event.kind === "runFailed") && event.runId !== this.runId) {
      return;
    }
    this.push(event);
    if (event.kind === "runFailed") this.fail(new RunFailed(event.message, event.runId));
  }
  push(event) {
    if (this.outcome !== void 0) return;
    this.queue.push(event);
    if (event.kind === "runFinished") {
      this.outcome = {};
      this.settle.resolve(event);
    }
    this.notify();
  }
  /** @internal End the run with an error (RunFailed, ConnectionClosed). */
  fail(error) {
    if (this.outcome !== void 0) return;
    this.outcome = { error };
    this.settle.reject(error);
    this.notify();
  }
  async *[Symbol.asyncIterator]() {
    for (; ; ) {
      const event = this.queue.shift();
      if (event !== void 0) {
        yield event;
        continue;
      }
      if (this.outcome !== void 0) {
        if (this.outcome.error !== void 0) throw this.outcome.error;
        return;
      }
      await new Promise((resolve) => this.wake = resolve);
    }
  }
  notify() {
    const wake = this.wake;
    this.wake = void 0;
    wake?.();
  }
};

// src/consent.ts
var NO_HANDLER = "no consent handler in this client";
async function decide(handler, request) {
  const answer = (allow, scope2 = "once", reason2) => ({
    type: MessageType.CONSENT_ANSWER,
    id: request.id,
    allow,
    scope: scope2,
    ...reason2 !== void 0 && { reason: reason2 }
  });
  if (handler === void 0) return answer(false, "once", NO_HANDLER);
  let value;
  try {
    value = await handler(request);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return answer(false, "once", `the consent handler failed: ${message}`);
  }
  let decision;
  if (typeof value === "boolean") {
    decision = { allow: value };
  } else if (typeof value === "object" && value !== null && typeof value.allow === "boolean") {
    decision = value;
  } else {
    const got = value === null ? "null" : typeof value;
    return answer(false, "once", `the consent handler returned ${got}, not a boolean or {allow, scope, reason}`);
  }
  let scope = decision.scope === "thread" ? "thread" : "once";
  if (decision.allow && scope === "thread" && request.allowAlways === false) scope = "once";
  const reason = !decision.allow && !decision.reason ? "the user said no" : decision.reason;
  return answer(decision.allow, scope, reason);
}

// src/state.ts
function webStorage(storage, key) {
  return {
    load() {
      const text = storage.getItem(key);
      if (text === null) return void 0;
      try {
        return JSON.parse(text);
      } catch {
        return void 0;
      }
    },
    save(state) {
      storage.setItem(key, JSON.stringify(state));
    }
  };
}
var packed = /* @__PURE__ */ new WeakMap();
function packMessage(message) {
  let text = packed.get(message);
  if (text === void 0) {
    text = toBase64(packValue(toBody(message)));
    packed.set(message, text);
  }
  return text;
}
function unpackMessage(type, text) {
  try {
    const body = unpackValue(fromBase64(text), DEFAULT_LIMITS);
    if (!isMap(body)) throw new UsageError("not a map");
    return parseBody(type, body);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UsageError(`not a stored message of type ${type}: ${reason}`);
  }
}
function readState(state) {
  if (state?.version !== 1 || !Array.isArray(state.ledger) || !Array.isArray(state.consents)) {
    throw new UsageError("not a toolwire ClientState (version 1)");
  }
  return {
    ledger: state.ledger.map((entry) => ({
      request: unpackMessage(MessageType.TOOL_USE_REQUEST, entry.request),
      ...entry.result !== void 0 && {
        result: unpackMessage(MessageType.TOOL_USE_RESULT, entry.result)
      },
      ...Number.isInteger(entry.stanzaId) && { stanzaId: entry.stanzaId },
      ...entry.withdrawn !== void 0 && { withdrawn: withdrawal(entry.withdrawn) }
    })),
    consents: state.consents.map((entry) => ({
      request: unpackMessage(MessageType.CONSENT_REQUEST, entry.request),
      ...entry.answer !== void 0 && {
        answer: unpackMessage(MessageType.CONSENT_ANSWER, entry.answer)
      }
    }))
  };
}
function withdrawal(value) {
  const { code, reason } = isMap(value) ? value : {};
  if (typeof code !== "string") throw new UsageError("a ledger entry's withdrawal has no code");
  return { code, ...typeof reason === "string" && { reason } };
}

// src/results.ts
var ResultType = { SUCCESS: 0, ERROR: 1, CANCELED: 2, TIMEOUT: 3, DENIED: 4 };
var CODE_RESULT_TYPES = Object.freeze({
  unknown_tool: ResultType.ERROR,
  invalid_parameters: ResultType.ERROR,
  execution_error: ResultType.ERROR,
  client_disconnected: ResultType.ERROR,
  result_too_large: ResultType.ERROR,
  invalid_result: ResultType.ERROR,
  timeout: ResultType.TIMEOUT,
  canceled: ResultType.CANCELED,
  denied: ResultType.DENIED
});
var DEFAULT_CODES = Object.freeze({
  [ResultType.ERROR]: "execution_error",
  [ResultType.CANCELED]: "canceled",
  [ResultType.TIMEOUT]: "timeout",
  [ResultType.DENIED]: "denied"
});
function resultTypeForCode(code) {
  return Object.hasOwn(CODE_RESULT_TYPES, code) ? CODE_RESULT_TYPES[code] : ResultType.ERROR;
}
function failure(requestId, code, message) {
  return { type: MessageType.TOOL_USE_RESULT, id: requestId, success: false, errorCode: code, errorMessage: message };
}
var EFFECT_UNKNOWN_NOTE = " (the tool could not be stopped; its effect is unknown)";
function timeoutFailure(requestId, durationMs, effectUnknown = false) {
  const text = `Tool execution exceeded timeout of ${durationMs}ms`;
  const detail2 = effectUnknown ? { durationMs, effectUnknown: true } : { durationMs };
  return { ...failure(requestId, "timeout", effectUnknown ? text + EFFECT_UNKNOWN_NOTE : text), result: { timeout: detail2 } };
}
function outcomeOf(result, context = {}) {
  if (result.success) {
    return { type: ResultType.SUCCESS, value: result.content?.length ? contentValue(result.content) : unwrapValue(result.result) };
  }
  const named = result.resultType;
  const type = named !== void 0 && named > 0 && named <= 4 ? named : resultTypeForCode(result.errorCode ?? "");
  const code = result.errorCode ?? DEFAULT_CODES[type];
  const message = result.errorMessage ?? "";
  const outcome = { type, code, message };
  switch (type) {
    case ResultType.TIMEOUT: {
      const sent = detail(result.result, "timeout");
      const duration = sent.durationMs;
      const found = /timeout of (\d+)\s*ms/.exec(message);
      outcome.durationMs = typeof duration === "number" && Number.isInteger(duration) && duration >= 0 ? duration : found ? Number(found[1]) : context.deadlineMs ?? null;
      outcome.effectUnknown = sent.effectUnknown === true || message.endsWith(EFFECT_UNKNOWN_NOTE);
      break;
    }
    case ResultType.DENIED: {
      const sent = detail(result.result, "denied");
      const standard = /^Call to '(.*?)' was denied: ([\s\S]*)$/.exec(message);
      outcome.tool = context.toolName || (typeof sent.tool === "string" ? sent.tool : standard?.[1] ?? "");
      outcome.reason = typeof sent.reason === "string" ? sent.reason : standard?.[2] ?? message;
      break;
    }
    case ResultType.CANCELED: {
      const sent = detail(result.result, "canceled");
      outcome.reason = typeof sent.reason === "string" ? sent.reason : message;
      outcome.by = sent.by === "policy" || sent.by === "system" ? sent.by : "user";
      break;
    }
  }
  return outcome;
}
function detail(result, key) {
  const inner = result?.[key];
  return isMap(inner) ? inner : {};
}
function unwrapValue(value) {
  if (value === void 0) return void 0;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "value" ? value.value : value;
}
function contentValue(items) {
  const [first] = items;
  if (items.length !== 1 || first === void 0) return items;
  return first.type === "text" ? first.text : first.type === "json" ? first.value : first;
}

// src/tools.ts
var ToolResponse = class {
  content;
  success;
  errorCode;
  errorMessage;
  augmentation;
  constructor(init = {}) {
    this.content = init.content ?? [];
    this.success = init.success ?? true;
    this.errorCode = init.errorCode;
    this.errorMessage = init.errorMessage;
    this.augmentation = init.augmentation;
  }
};
function success(requestId, value) {
  const type = MessageType.TOOL_USE_RESULT;
  if (value instanceof ToolResponse) return fromResponse(requestId, value);
  if (value === void 0 || value === null) return { type, id: requestId, success: true };
  const wire = toWire(value);
  const result = isPlainObject(wire) && !isValueObject(wire) ? wire : { value: wire };
  return { type, id: requestId, success: true, result };
}
function isValueObject(value) {
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "value";
}
function fromResponse(requestId, response) {
  const base = { type: MessageType.TOOL_USE_RESULT, id: requestId, success: response.success };
  if (!response.success) {
    base.errorCode = response.errorCode ?? "execution_error";
    base.errorMessage = response.errorMessage ?? "the tool failed";
  }
  if (response.content.length > 0) base.content = response.content.map((item) => toWire(item));
  if (response.augmentation !== void 0) base.augmentation = toWire(response.augmentation);
  return base;
}
function isPlainObject(value) {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
function toWire(value, seen = /* @__PURE__ */ new Set()) {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") return value;
  if (typeof value === "bigint") throw new UsageError("a bigint cannot be sent: convert it to a number or a string");
  if (typeof value !== "object") return void 0;
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  const withJson = value;
  if (typeof withJson.toJSON === "function") return toWire(withJson.toJSON(), seen);
  if (seen.has(value)) throw new UsageError("a value that contains itself cannot be sent");
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => toWire(item, seen) ?? null);
    const entries = value instanceof Map ? [...value.entries()].map(([k, v]) => [String(k), v]) : Object.entries(value);
    const out = {};
    for (const [key, item] of entries) {
      const converted = toWire(item, seen);
      if (converted !== void 0) Object.defineProperty(out, key, { value: converted, enumerable: true, writable: true, configurable: true });
    }
    return out;
  } finally {
    seen.delete(value);
  }
}
function argumentProblems(schema, args) {
  if (schema === void 0) return "";
  const problems = [];
  const properties = isPlainObject(schema["properties"]) ? schema["properties"] : {};
  const required = Array.isArray(schema["required"]) ? schema["required"] : [];
  for (const name of required) {
    if (typeof name === "string" && !Object.prototype.hasOwnProperty.call(args, name)) {
      problems.push(`'${name}' is a required property`);
    }
  }
  for (const [name, value] of Object.entries(args)) {
    const property = properties[name];
    if (property === void 0) {
      if (schema["additionalProperties"] === false) problems.push(`'${name}' is not an allowed property`);
      continue;
    }
    const wanted = isPlainObject(property) ? property["type"] : void 0;
    const types = typeof wanted === "string" ? [wanted] : Array.isArray(wanted) ? wanted : [];
    if (types.length > 0 && !types.some((type) => hasType(value, type))) {
      problems.push(`'${name}' must be of type ${types.join(" or ")}`);
    }
  }
  return problems.join("; ");
}
function hasType(value, type) {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isPlainObject(value);
    default:
      return true;
  }
}
var ENVELOPE_ALLOWANCE = 256;
var Handlers = class {
  constructor(limits = DEFAULT_LIMITS) {
    this.limits = limits;
  }
  limits;
  handlers = /* @__PURE__ */ new Map();
  /** Tool name → its registered `parametersSchema`. */
  schemas = /* @__PURE__ */ new Map();
  /** Run `handler` for requests of tool `name` (replacing a handler of the same name). */
  add(name, handler) {
    const spec = typeof handler === "function" ? { handler } : handler;
    if (typeof spec.handler !== "function") throw new UsageError(`the handler for '${name}' must be a function`);
    if (spec.timeoutMs !== void 0 && !(spec.timeoutMs > 0)) {
      throw new UsageError(`the timeout of '${name}' must be a positive number of milliseconds`);
    }
    this.handlers.set(name, spec);
  }
  /** Whether a handler runs tool `name`. */
  has(name) {
    return this.handlers.has(name);
  }
  /** Remember the parameters schemas of the groups' tools (after the server accepted them). */
  learn(groups) {
    for (const group of groups) {
      for (const tool of group.tools ?? []) {
        if (tool.parametersSchema !== void 0) this.schemas.set(tool.name, tool.parametersSchema);
        else this.schemas.delete(tool.name);
      }
    }
  }
  /**
   * Run the request's handler and return the answer; never rejects.
   *
   * @param cancel aborting it stops waiting for the handler (whose own signal is aborted too);
   *   the answer is then `canceled`, or the code and message of the `ToolError` it was aborted with.
   */
  async run(request, cancel) {
    const { id, toolName: name } = request;
    const spec = this.handlers.get(name);
    if (spec === void 0) return failure(id, "unknown_tool", `This client has no tool '${name}'.`);
    const problems = argumentProblems(this.schemas.get(name), request.arguments);
    if (problems) return failure(id, "invalid_parameters", `Invalid arguments for tool '${name}': ${problems}`);
    let deadline = request.timeoutMs ?? 3e4;
    if (spec.timeoutMs !== void 0) deadline = Math.min(deadline, Math.max(1, Math.round(spec.timeoutMs)));
    const controller = new AbortController();
    let timer;
    let stop;
    const ended = new Promise((resolve) => {
      timer = setTimeout(() => {
        const answer = timeoutFailure(id, deadline);
        controller.abort(new ToolError(answer.errorMessage ?? "", { code: "timeout" }));
        resolve(answer);
      }, deadline);
      stop = () => {
        const reason = cancel?.reason;
        if (reason instanceof ToolError) {
          controller.abort(reason);
          resolve(failure(id, reason.code, reason.message));
          return;
        }
        controller.abort(new ToolError("the client was closed", { code: "canceled" }));
        resolve(failure(id, "canceled", "the client was closed while the tool ran"));
      };
      if (cancel?.aborted) stop();
      cancel?.addEventListener("abort", stop);
    });
    const ran = (async () => {
      try {
        const value = await spec.handler(request.arguments, { request, signal: controller.signal });
        return this.checked(success(id, value));
      } catch (error) {
        if (error instanceof ToolError) return toolError(id, error);
        const message = error instanceof Error ? error.message || error.name : String(error);
        return failure(id, "execution_error", message || "the tool failed");
      }
    })();
    try {
      return await Promise.race([ran, ended]);
    } finally {
      clearTimeout(timer);
      if (stop !== void 0) cancel?.removeEventListener("abort", stop);
    }
  }
  /** Refuse values that cannot travel: not MessagePack-able, beyond the limits, larger than a frame. */
  checked(result) {
    let frame;
    try {
      frame = encode2({ stanzaId: 1, conversationId: "c", message: result, meta: {} });
      check(frame, this.limits);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return failure(result.id, "execution_error", `the tool's value cannot be sent: ${reason}`);
    }
    if (frame.byteLength > this.limits.maxFrameBytes - ENVELOPE_ALLOWANCE) {
      const message = `the tool's value is ${frame.byteLength} bytes, more than a frame holds (${this.limits.maxFrameBytes})`;
      return failure(result.id, "result_too_large", message);
    }
    return result;
  }
};
function toolError(requestId, error) {
  const result = failure(requestId, error.code, error.message);
  if (error.terminal) result.terminal = true;
  if (!error.needsFollowup) result.needsFollowup = false;
  return result;
}
function settled(entry) {
  return entry.result !== void 0 || entry.withdrawn !== void 0;
}
var ExecutionLedger = class {
  constructor(maxEntries = 1e3) {
    this.maxEntries = maxEntries;
  }
  maxEntries;
  entries = /* @__PURE__ */ new Map();
  /** The execution of `requestId`, if this client has seen it. */
  get(requestId) {
    return this.entries.get(requestId);
  }
  /**
   * Record that `request` runs now; call `get()` first, a request id starts only once.
   *
   * @throws UsageError the request id is already in the ledger.
   */
  start(request) {
    if (this.entries.has(request.id)) throw new UsageError(`request '${request.id}' already ran: answer it from the ledger`);
    const entry = { request };
    this.entries.set(request.id, entry);
    this.trim();
    return entry;
  }
  /** Put an entry back, e.g. from persisted state. */
  restore(entry) {
    this.entries.set(entry.request.id, entry);
    this.trim();
  }
  /** The execution whose result was first sent with stanza id `stanzaId` (an ErrorMessage 302 names it). */
  sentWith(stanzaId) {
    for (const entry of this.entries.values()) if (entry.stanzaId === stanzaId) return entry;
    return void 0;
  }
  /** Every execution, oldest first. */
  list() {
    return [...this.entries.values()];
  }
  get size() {
    return this.entries.size;
  }
  trim() {
    while (this.entries.size > this.maxEntries) {
      const oldest = [...this.entries.entries()].find(([, entry]) => settled(entry));
      if (oldest === void 0) return;
      this.entries.delete(oldest[0]);
    }
  }
};

// src/tracing.ts
var TRACE_ID = "messaging.trace_id";
var SPAN_ID = "messaging.span_id";
var TRACE = /^[0-9a-f]{32}$/;
var SPAN = /^[0-9a-f]{16}$/;
var ZEROS = /^0+$/;
function traceParent(meta) {
  const traceId = meta[TRACE_ID];
  const spanId = meta[SPAN_ID];
  if (typeof traceId !== "string" || typeof spanId !== "string") return void 0;
  if (!TRACE.test(traceId) || !SPAN.test(spanId) || ZEROS.test(traceId) || ZEROS.test(spanId)) return void 0;
  return { traceId, spanId };
}

// src/requests.ts
var MAX_REMEMBERED = 1e3;
var Requests = class {
  constructor(handlers, ledger, io) {
    this.handlers = handlers;
    this.ledger = ledger;
    this.io = io;
  }
  handlers;
  ledger;
  io;
  consents = /* @__PURE__ */ new Map();
  asking = /* @__PURE__ */ new Set();
  /** Request id → the controller of its running handler (a withdrawal aborts it). */
  running = /* @__PURE__ */ new Map();
  /**
   * A ToolUseRequest to run here (`execution` "client" or "either").
   *
   * @param meta its envelope's, which may name the server's call span (`traceParent`).
   */
  tool(request, meta = {}) {
    const entry = this.ledger.get(request.id);
    if (entry?.withdrawn !== void 0) return;
    const parent = traceParent(meta);
    if (entry === void 0) {
      this.ledger.start(request);
      void this.execute(request, parent);
    } else if (entry.result !== void 0) {
      this.io.post(entry.result);
      this.io.emit({ kind: "clientToolCall", request, result: entry.result, durationMs: 0, replayed: true });
    } else if (!this.running.has(request.id)) {
      this.interrupted(entry.request, parent);
    }
  }
  /** A ToolUseCancel: the server settled the call without this client's result. */
  withdraw(cancel) {
    const { id, code, reason } = cancel;
    const entry = this.ledger.get(id);
    if (entry?.withdrawn !== void 0) return;
    if (entry !== void 0) entry.withdrawn = { code, ...reason !== void 0 && { reason } };
    const running = this.running.get(id);
    running?.abort(new ToolError(`the server withdrew the call (${code})${reason ? `: ${reason}` : ""}`, { code }));
    this.io.emit({
      kind: "clientToolCanceled",
      requestId: id,
      ...entry !== void 0 && { request: entry.request },
      code,
      ...reason !== void 0 && { reason },
      running: running !== void 0
    });
  }
  /**
   * An ErrorMessage 302 named stanza `stanzaId`: report the result it refused.
   *
   * @returns false when no result was first sent with that stanza id (e.g. an answer sent again
   *   from the ledger after a resume, which the server had taken already).
   */
  refused(stanzaId, message) {
    const entry = this.ledger.sentWith(stanzaId);
    if (entry?.result === void 0) return false;
    this.io.emit({ kind: "resultRefused", request: entry.request, result: entry.result, message });
    return true;
  }
  /** A ConsentRequest. */
  consent(request) {
    const known = this.consents.get(request.id);
    if (known === void 0) {
      this.consents.set(request.id, { request });
      this.forgetOldConsents();
      void this.ask(request);
    } else if (known.answer !== void 0) {
      this.io.post(known.answer);
    } else if (!this.asking.has(request.id)) {
      void this.ask(request);
    }
  }
  /** The conversation (re)opened: finish the calls and prompts a reload interrupted. */
  resume() {
    for (const entry of this.ledger.list()) {
      if (!settled(entry) && !this.running.has(entry.request.id)) this.interrupted(entry.request);
    }
    for (const { request, answer } of this.consents.values()) {
      if (answer === void 0 && !this.asking.has(request.id)) void this.ask(request);
    }
  }
  /** The ledger and consent prompts, for `ClientState`. */
  export() {
    return {
      ledger: this.ledger.list().map(({ request, result, stanzaId, withdrawn }) => ({
        request: packMessage(request),
        ...result !== void 0 && { result: packMessage(result) },
        ...stanzaId !== void 0 && { stanzaId },
        ...withdrawn !== void 0 && { withdrawn }
      })),
      consents: [...this.consents.values()].map(({ request, answer }) => ({
        request: packMessage(request),
        ...answer !== void 0 && { answer: packMessage(answer) }
      }))
    };
  }
  /** Take back what `export()` saved. */
  restore(state) {
    for (const entry of state.ledger) this.ledger.restore(entry);
    for (const entry of state.consents) this.consents.set(entry.request.id, entry);
  }
  interrupted(request, parent) {
    if (request.mode === "read") {
      void this.execute(request, parent);
      return;
    }
    const message = `the client was reloaded while '${request.toolName}' ran; whether it took effect is unknown`;
    this.answer(request, failure(request.id, "execution_error", message), 0);
  }
  async execute(request, parent) {
    const controller = new AbortController();
    const closed = () => controller.abort(this.io.signal.reason);
    this.io.signal.addEventListener("abort", closed);
    this.running.set(request.id, controller);
    this.io.emit({ kind: "clientToolStarted", request });
    const started = performance.now();
    const result = await this.traced(request, parent, () => this.handlers.run(request, controller.signal));
    this.running.delete(request.id);
    this.io.signal.removeEventListener("abort", closed);
    if (this.io.signal.aborted) return;
    if (this.ledger.get(request.id)?.withdrawn !== void 0) return;
    this.answer(request, result, performance.now() - started);
  }
  /** `run()` inside the client's `traceExecution`, if any; a hook that throws is warned about and bypassed. */
  async traced(request, parent, run) {
    const hook = this.io.traceExecution;
    if (hook === void 0) return run();
    let running;
    const once = () => running ??= run();
    const { toolName, callId, id } = request;
    try {
      return await hook({ toolName, callId: callId ?? id, requestId: id, ...parent }, once);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.io.emit({ kind: "warning", message: `traceExecution failed for '${toolName}': ${message}` });
      return once();
    }
  }
  answer(request, result, durationMs) {
    const entry = this.ledger.get(request.id) ?? this.ledger.start(request);
    entry.result = result;
    entry.durationMs = durationMs;
    this.io.post(result, (stanzaId) => entry.stanzaId = stanzaId);
    this.io.emit({ kind: "clientToolCall", request, result, durationMs, replayed: false });
  }
  async ask(request) {
    this.asking.add(request.id);
    const answer = await decide(this.io.onConsent, request);
    this.asking.delete(request.id);
    if (this.io.signal.aborted) return;
    const entry = this.consents.get(request.id);
    if (entry !== void 0) entry.answer = answer;
    this.io.post(answer);
    this.io.emit({ kind: "consent", request, answer });
  }
  forgetOldConsents() {
    for (const [id, entry] of this.consents) {
      if (this.consents.size <= MAX_REMEMBERED) return;
      if (entry.answer !== void 0) this.consents.delete(id);
    }
  }
};

// src/transport.ts
function socketUrl(url, token) {
  const base = globalThis.location?.href;
  const resolved = new URL(url, base);
  if (resolved.protocol === "http:") resolved.protocol = "ws:";
  if (resolved.protocol === "https:") resolved.protocol = "wss:";
  resolved.searchParams.set("token", token);
  return resolved.toString();
}
function hintedUrl(url, conversationId) {
  if (!conversationId) return url;
  const hinted = new URL(url);
  hinted.searchParams.set("conversation", conversationId);
  return hinted.toString();
}
function backoff(attempt, options = {}) {
  if (attempt <= 1) return 0;
  const { initialDelayMs = 100, maxDelayMs = 5e3, factor = 2 } = options;
  return Math.min(maxDelayMs, initialDelayMs * factor ** (attempt - 2)) * (0.5 + Math.random() / 2);
}
async function refusal(url) {
  const fetch = globalThis.fetch;
  if (fetch === void 0) return void 0;
  const check2 = new URL(url);
  check2.protocol = check2.protocol === "wss:" ? "https:" : "http:";
  const token = check2.searchParams.get("token") ?? "";
  check2.searchParams.delete("token");
  const where = `${check2.origin}${check2.pathname}`;
  let status;
  try {
    const answer = await fetch(check2, {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
      signal: AbortSignal.timeout(5e3)
    });
    status = answer.status;
  } catch {
    return void 0;
  }
  if (status === 401) return new ConnectionClosed(`${where} refused the token (HTTP 401)`, ErrorCode.UNAUTHENTICATED);
  if (status === 403) return new ConnectionClosed(`${where} refused this origin (HTTP 403)`, ErrorCode.FORBIDDEN);
  return void 0;
}
var encoder = new TextEncoder();
function webSocketDialer(WebSocket) {
  return (url, events) => new Promise((resolve, reject) => {
    const Socket = WebSocket ?? globalThis.WebSocket;
    if (Socket === void 0) {
      reject(new UsageError("no WebSocket in this environment: pass webSocketDialer(WebSocket), e.g. from the ws package"));
      return;
    }
    const where = url.split("?", 1)[0];
    const socket = new Socket(url);
    socket.binaryType = "arraybuffer";
    let opened = false;
    const transport = {
      send: (frame) => socket.send(frame),
      close: () => socket.close(1e3)
    };
    socket.onopen = () => {
      opened = true;
      resolve(transport);
    };
    socket.onmessage = ({ data }) => {
      if (data instanceof ArrayBuffer) events.frame(new Uint8Array(data));
      else if (ArrayBuffer.isView(data)) events.frame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      else events.frame(encoder.encode(String(data)));
    };
    socket.onerror = () => {
    };
    socket.onclose = ({ code, reason }) => {
      const why = `${where} closed the connection (code ${code}${reason ? `: ${reason}` : ""})`;
      if (opened) {
        events.closed(why);
        return;
      }
      const unknown = new Error(`cannot reach ${where} (code ${code}): is the server up, are the token and the page's origin allowed?`);
      refusal(url).then(
        (refused) => reject(refused ?? unknown),
        () => reject(unknown)
      );
    };
  });
}
var MemoryEnd = class _MemoryEnd {
  events;
  peer;
  open = true;
  early = [];
  /** @internal */
  static pair() {
    const a = new _MemoryEnd();
    const b = new _MemoryEnd();
    a.peer = b;
    b.peer = a;
    return [a, b];
  }
  /** Start receiving: frames sent before this are delivered now. */
  attach(events) {
    this.events = events;
    for (const frame of this.early.splice(0)) queueMicrotask(() => this.deliver(frame));
  }
  /** True until either end closes or drops the pair. */
  get isOpen() {
    return this.open;
  }
  send(frame) {
    if (!this.open) return;
    const copy = frame.slice();
    queueMicrotask(() => this.peer.deliver(copy));
  }
  /** Close after the frames already sent are delivered. */
  close() {
    if (!this.open) return;
    queueMicrotask(() => this.shut("closed"));
  }
  /** Close at once, losing every frame in flight (a network failure). */
  drop() {
    this.shut("dropped");
  }
  shut(reason) {
    if (!this.open) return;
    this.open = this.peer.open = false;
    for (const end of [this, this.peer]) {
      const events = end.events;
      if (events !== void 0) queueMicrotask(() => events.closed(reason));
    }
  }
  deliver(frame) {
    if (!this.open) return;
    if (this.events === void 0) this.early.push(frame);
    else this.events.frame(frame);
  }
};
function memoryPair() {
  return MemoryEnd.pair();
}
function memoryDialer(accept) {
  return async (url, events) => {
    const [client, server] = memoryPair();
    await accept(server, url);
    client.attach(events);
    return client;
  };
}

// src/client.ts
var CLIENT_VERSION = "toolwire-web/0.1.0";
var FEATURES = ["clientTools", "consent", "runStatus", "resume", "runQueue"];
var WHOLE_ANSWERS = "wholeAnswers";
var MAX_REMEMBERED2 = 1e3;
async function connect(url, options) {
  const client = new ToolwireClient(url, options);
  await client.open();
  if (options.groups !== void 0 && options.groups.length > 0) {
    try {
      await client.register(options.groups, { expandedContainers: options.expandedContainers ?? [] });
    } catch (error) {
      client.close();
      throw error;
    }
  }
  return client;
}
var Transient = class extends Error {
};
var ToolwireClient = class {
  /** The functions that run this client's tools (`handlers.add(name, fn)` adds more). */
  handlers;
  /** Every client tool request answered, by request id. */
  ledger;
  options;
  url;
  limits;
  dial;
  connection;
  requested;
  transport;
  socket = 0;
  // which transport the callbacks are about: stale ones are ignored
  handshake;
  current = "connecting";
  failure;
  closing = false;
  closed = new AbortController();
  // cancels the handlers still running on close()
  registrations = [];
  requests;
  mirrored = /* @__PURE__ */ new Map();
  run;
  runId;
  constructor(url, options) {
    this.options = options;
    this.url = socketUrl(url, options.token);
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.dial = options.dial ?? webSocketDialer();
    this.handlers = new Handlers(this.limits);
    this.ledger = new ExecutionLedger(options.ledgerSize ?? 1e3);
    for (const [name, handler] of Object.entries(options.handlers ?? {})) this.handlers.add(name, handler);
    this.requests = new Requests(this.handlers, this.ledger, {
      post: (message, numbered) => {
        try {
          this.post(message, false, numbered);
        } catch (error) {
          this.warn(`an answer could not be sent: ${error.message}`);
        }
      },
      emit: (event) => this.emit(event),
      onConsent: options.onConsent,
      signal: this.closed.signal,
      traceExecution: options.traceExecution
    });
    this.connection = new Connection("client", { limits: this.limits });
    this.requested = options.conversationId;
    const saved = options.state ?? options.persist?.load();
    if (saved?.sequencing) this.restore(saved);
  }
  /** The conversation's id ("" before the first handshake); pass it as `conversationId` to continue it later. */
  get conversationId() {
    return this.connection.conversationId ?? "";
  }
  /** The connection's state, for a UI indicator (also reported as `connection` events). */
  get connectionState() {
    return this.current;
  }
  // -- lifetime ------------------------------------------------------------------------------
  /**
   * Connect and complete the handshake; `connect()` calls it.
   *
   * @throws ConnectionClosed the server cannot be reached or refused the connection.
   */
  async open() {
    this.setState("connecting");
    try {
      await this.attempt(this.requested);
    } catch (error) {
      const closed = error instanceof ConnectionClosed ? error : new ConnectionClosed(String(error.message ?? error));
      this.fail(closed);
      throw closed;
    }
  }
  /**
   * Close the connection for good. Handlers still running are canceled (their signal aborts) and
   * nothing more is sent or saved; what was unsent stays in the saved state for a later resume.
   */
  close() {
    if (this.closing) return;
    this.closing = true;
    this.closed.abort();
    const transport = this.transport;
    this.transport = void 0;
    this.socket += 1;
    transport?.close();
    this.fail(new ConnectionClosed("the client was closed"));
  }
  /** The state to persist; `connect({state})` resumes from it (see `ClientState`). */
  exportState() {
    const state = this.connection.state();
    return {
      version: 1,
      sequencing: state === void 0 ? null : sequencingToJSON(state),
      ...this.requests.export()
    };
  }
  // -- what an application calls -------------------------------------------------------------
  /**
   * Register tool groups for the conversation and wait until the server applied them; they
   * replace same-named groups and survive reconnects.
   *
   * @throws RegistrationError the server refused them (its message, group and tool).
   * @throws ConnectionClosed the connection ended for good first.
   */
  async register(groups, options = {}) {
    const message = {
      type: MessageType.REGISTER_TOOLS,
      groups: toWire(groups),
      expandedContainers: options.expandedContainers ?? [],
      resetClientState: options.resetClientState ?? false
    };
    const result = new Promise((resolve, reject) => this.registrations.push({ resolve, reject }));
    try {
      this.post(message, true);
    } catch (error) {
      this.registrations.pop();
      throw error;
    }
    const answer = await result;
    if (answer.type !== MessageType.REGISTER_TOOLS_RESULT) throw new UsageError("unexpected registration answer");
    if (!answer.ok) throw new RegistrationError(answer.error ?? "the server refused the tool groups", answer.group, answer.tool);
    this.handlers.learn(groups);
  }
  /**
   * Send a user message; its `Run` streams the events until the run ends.
   *
   * @throws UsageError the previous run has not ended yet.
   * @throws ConnectionClosed the connection ended for good.
   */
  send(text) {
    if (this.run !== void 0 && !this.run.done) {
      throw new UsageError("a run is in progress: await its `finished` (or stop() it) before sending again");
    }
    const id = newId("msg");
    const stanza = this.post({ type: MessageType.USER_MESSAGE, id, content: text }, true);
    this.run = new Run(stanza, id);
    return this.run;
  }
  /**
   * Send a user message and return the final answer ("" when the run ended without one).
   *
   * @throws RunFailed the server refused the message or the run failed.
   * @throws ConnectionClosed the connection ended for good.
   */
  async ask(text) {
    const finished = await this.send(text).finished;
    return finished.output ?? "";
  }
  /** Ask the server to stop the run in progress (ControlStop); it then finishes as `canceled`. */
  stop(reason) {
    this.post({ type: MessageType.CONTROL_STOP, ...this.runId && { runId: this.runId }, ...reason && { reason } }, true);
  }
  // -- the connection ------------------------------------------------------------------------
  async attempt(conversationId) {
    const socket = ++this.socket;
    let pending;
    const handshake = new Promise((resolve, reject) => {
      pending = { resolve, reject, transport: void 0 };
    });
    handshake.catch(() => {
    });
    this.handshake = pending;
    const timer = setTimeout(() => {
      if (this.handshake !== pending) return;
      pending.reject(new Transient("the server did not answer the handshake in time"));
    }, this.options.handshakeTimeoutMs ?? 1e4);
    let transport;
    try {
      const dialing = this.dial(hintedUrl(this.url, conversationId), {
        frame: (data) => this.received(socket, data),
        closed: (reason) => this.dropped(socket, reason)
      });
      try {
        transport = await Promise.race([dialing, handshake.then(() => dialing)]);
      } catch (error) {
        dialing.then((late) => late.close(), () => {
        });
        if (error instanceof ConnectionClosed) throw error;
        throw new Transient(error instanceof Error ? error.message : String(error));
      }
      if (socket !== this.socket) {
        transport.close();
        throw new ConnectionClosed("the client was closed");
      }
      pending.transport = transport;
      const state = this.connection.state();
      const options = { limits: this.limits };
      this.connection = state ? Connection.resume(state, options) : new Connection("client", options);
      transport.send(
        this.connection.hello(conversationId, {
          clientVersion: this.options.clientVersion ?? CLIENT_VERSION,
          device: this.options.device ?? "browser",
          features: this.options.wholeAnswers ? [...FEATURES, WHOLE_ANSWERS] : FEATURES
        })
      );
      await handshake;
    } catch (error) {
      if (socket === this.socket) this.socket += 1;
      transport?.close();
      throw error;
    } finally {
      clearTimeout(timer);
      if (this.handshake === pending) this.handshake = void 0;
    }
  }
  received(socket, data) {
    if (socket !== this.socket) return;
    const handshake = this.handshake;
    if (handshake !== void 0) {
      this.answered(handshake, data);
      return;
    }
    const transport = this.transport;
    if (transport === void 0) return;
    const received2 = this.connection.receive(data);
    this.write(received2.replies);
    for (const envelope2 of received2.messages) this.act(envelope2);
    this.persist();
    if (received2.close) {
      const error = received2.messages.map((e) => e.message).find((m) => m.type === MessageType.ERROR);
      const text = error?.message ?? received2.errors[0]?.detail ?? "the connection closed after a protocol error";
      this.fail(new ConnectionClosed(`the server closed the conversation: ${text}`, error?.code ?? received2.errors[0]?.code));
      this.socket += 1;
      transport.close();
      return;
    }
    if (received2.messages.length > 0) {
      const ack = this.connection.ack();
      if (ack !== void 0) this.write([ack]);
    }
  }
  answered(handshake, data) {
    const received2 = this.connection.receive(data);
    const refusal2 = received2.messages.map((e) => e.message).find((m) => m.type === MessageType.ERROR);
    if (refusal2 !== void 0) {
      handshake.reject(new ConnectionClosed(`the server refused: ${refusal2.message}`, refusal2.code));
      return;
    }
    if (!this.connection.isOpen) {
      const error = received2.errors[0];
      handshake.reject(new ConnectionClosed(error?.detail ?? "the handshake did not complete", error?.code));
      return;
    }
    this.handshake = void 0;
    this.transport = handshake.transport;
    this.requested = this.connection.conversationId;
    this.write(received2.replies);
    this.opened();
    handshake.resolve();
  }
  dropped(socket, reason) {
    if (socket !== this.socket) return;
    if (this.handshake !== void 0) {
      this.handshake.reject(new Transient(reason));
      return;
    }
    this.transport = void 0;
    if (this.closing || this.failure !== void 0) return;
    void this.reconnect(reason);
  }
  async reconnect(reason) {
    const policy = this.options.reconnect;
    if (policy === false) {
      this.fail(new ConnectionClosed(`the connection dropped (${reason}); reconnect is off`));
      return;
    }
    const attempts = policy?.attempts ?? 8;
    let last = reason;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      this.setState("reconnecting", attempt);
      await new Promise((resolve) => setTimeout(resolve, backoff(attempt, policy)));
      if (this.closing || this.failure !== void 0) return;
      try {
        await this.attempt(this.conversationId);
      } catch (error) {
        if (error instanceof ConnectionClosed) {
          this.fail(error);
          return;
        }
        last = error instanceof Error ? error.message : String(error);
        continue;
      }
      return;
    }
    this.fail(new ConnectionClosed(`gave up reconnecting after ${attempts} attempts: ${last}`));
  }
  /** The handshake completed: say so, and finish what a reload or a drop interrupted. */
  opened() {
    this.setState("open");
    this.persist();
    this.requests.resume();
  }
  write(frames) {
    const transport = this.transport;
    if (transport === void 0) return;
    for (const frame of frames) {
      try {
        transport.send(frame);
      } catch {
        return;
      }
    }
  }
  /**
   * Number and send a message; it stays in the outbox (and the saved state) until acknowledged.
   *
   * @param numbered told the stanza id before the state is saved.
   * @returns the message's stanza id.
   */
  post(message, own2 = false, numbered) {
    if (own2 && this.failure !== void 0) throw this.failure;
    const frame = this.connection.send(message);
    numbered?.(this.connection.lastStanza);
    this.persist();
    if (frame.byteLength > 0) this.write([frame]);
    return this.connection.lastStanza;
  }
  fail(error) {
    if (this.failure === void 0) this.failure = error;
    this.transport = void 0;
    for (const waiter of this.registrations.splice(0)) waiter.reject(this.failure);
    this.run?.fail(this.failure);
    this.handshake?.reject(this.failure);
    this.setState("closed");
  }
  setState(state, attempt) {
    if (state === this.current && attempt === void 0) return;
    this.current = state;
    this.emit({
      kind: "connection",
      state,
      ...attempt !== void 0 && { attempt },
      ...state === "closed" && this.failure !== void 0 && { error: this.failure }
    });
  }
  // -- what arrives --------------------------------------------------------------------------
  act(envelope2) {
    const message = envelope2.message;
    switch (message.type) {
      case MessageType.TOOL_USE_REQUEST:
        if (message.execution === "server") {
          remember(this.mirrored, message.id, message.toolName);
          this.emit({ kind: "serverToolCall", request: message });
        } else {
          this.requests.tool(message, envelope2.meta);
        }
        return;
      case MessageType.TOOL_USE_RESULT: {
        const toolName = this.mirrored.get(message.id) ?? "";
        this.mirrored.delete(message.id);
        const outcome = outcomeOf(message, toolName ? { toolName } : {});
        this.emit({ kind: "serverToolResult", result: message, toolName, outcome });
        return;
      }
      case MessageType.TOOL_USE_CANCEL:
        this.requests.withdraw(message);
        return;
      case MessageType.CONSENT_REQUEST:
        this.requests.consent(message);
        return;
      case MessageType.START_ANSWER:
      case MessageType.ASSISTANT_SENTENCE:
      case MessageType.ASSISTANT_MESSAGE:
      case MessageType.RUN_STATUS:
        if (message.type === MessageType.RUN_STATUS) {
          this.runId = message.status === "started" || message.status === "queued" ? message.runId : void 0;
        }
        this.emit(streamEvent(message));
        return;
      case MessageType.REGISTER_TOOLS_RESULT:
        this.registrations.shift()?.resolve(message);
        return;
      case MessageType.ERROR:
        if (message.recoverable === false) return;
        if (this.run !== void 0 && !this.run.done && message.originatingId === this.run.stanzaId) {
          this.emit({ kind: "runFailed", message: `the server refused the message: ${message.message}`, code: message.code });
        } else if (message.code === ErrorCode.RESULT_REFUSED) {
          const origin = message.originatingId;
          if (typeof origin !== "number" || !this.requests.refused(origin, message.message)) {
            this.warn(`the server refused an answer (${message.code}): ${message.message}`);
          }
        } else {
          this.emit({ kind: "serverError", error: message });
        }
        return;
      default:
        return;
    }
  }
  // -- events and state ----------------------------------------------------------------------
  emit(event) {
    this.run?.offer(event);
    const listener = this.options.onEvent;
    if (listener === void 0) return;
    try {
      listener(event);
    } catch (error) {
      setTimeout(() => {
        throw error;
      });
    }
  }
  warn(message) {
    this.emit({ kind: "warning", message });
  }
  persist() {
    const store = this.options.persist;
    if (store === void 0 || this.closing) return;
    try {
      store.save(this.exportState());
    } catch (error) {
      this.warn(`the client state could not be saved: ${error.message}`);
    }
  }
  restore(saved) {
    try {
      const sequencing = sequencingFromJSON(saved.sequencing);
      if (sequencing.role !== "client") throw new UsageError("a server's state");
      if (this.requested !== void 0 && this.requested !== sequencing.conversationId) return;
      const restored = readState(saved);
      this.connection = Connection.resume(sequencing, { limits: this.limits });
      this.requested = sequencing.conversationId;
      this.requests.restore(restored);
    } catch (error) {
      this.warn(`the saved state was ignored: ${error.message}`);
    }
  }
};
function remember(table, key, value) {
  table.set(key, value);
  if (table.size > MAX_REMEMBERED2) table.delete(table.keys().next().value);
}
export {
  CLIENT_VERSION,
  CODE_RESULT_TYPES,
  CONVERSATION_IN_BODY,
  Connection,
  ConnectionClosed,
  DEFAULT_CODES,
  DEFAULT_LIMITS,
  DEFAULT_TIMEOUT_MS,
  ErrorCode,
  ExecutionLedger,
  FEATURES,
  Frame,
  Handlers,
  MemoryEnd,
  MessageType,
  NO_HANDLER,
  ProtocolError,
  RegistrationError,
  Requests,
  ResultType,
  Run,
  RunFailed,
  SPAN_ID,
  Severity,
  TRACE_ID,
  ToolError,
  ToolResponse,
  ToolwireClient,
  ToolwireError,
  UsageError,
  WHOLE_ANSWERS,
  argumentProblems,
  backoff,
  check,
  connect,
  decide,
  decode2 as decode,
  defaultRecoverable,
  encode2 as encode,
  envelopeToMap,
  failure,
  fromBase64,
  isMap,
  kind,
  memoryDialer,
  memoryPair,
  messageTypeName,
  newId,
  outcomeOf,
  packValue,
  parseBody,
  readFrame,
  refusal,
  resultTypeForCode,
  sequencingFromJSON,
  sequencingToJSON,
  socketUrl,
  streamEvent,
  success,
  timeoutFailure,
  toBase64,
  toBody,
  toWire,
  traceParent,
  unpackValue,
  webSocketDialer,
  webStorage
};
//# sourceMappingURL=toolwire-client.js.map
