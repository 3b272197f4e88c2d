// RFC 6455 frames for the WebSocket-over-HTTP/2 test peers (node_ws_h2_origin.mjs,
// node_ws_h2_client.mjs): Node has no WebSocket over HTTP/2 of its own, so its http2 module
// carries these over an extended CONNECT stream (RFC 8441 keeps RFC 6455's framing, the
// client's masking included).
import crypto from 'node:crypto';

export const TEXT = 0x1;
export const BINARY = 0x2;
export const CONTINUATION = 0x0;
export const CLOSE = 0x8;
export const PING = 0x9;
export const PONG = 0xa;

// One frame; `masked` for a client's (a fresh key each frame).
export function frame(opcode, payload, {fin = true, masked = false} = {}) {
  const body = Buffer.from(payload);
  const length = body.length;
  const head = [(fin ? 0x80 : 0) | opcode];
  const maskBit = masked ? 0x80 : 0;
  if (length < 126) {
    head.push(maskBit | length);
  } else if (length < 65536) {
    head.push(maskBit | 126, length >> 8, length & 0xff);
  } else {
    head.push(maskBit | 127, 0, 0, 0, 0);
    head.push((length >>> 24) & 0xff, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff);
  }
  if (!masked) {
    return Buffer.concat([Buffer.from(head), body]);
  }
  const key = crypto.randomBytes(4);
  const out = Buffer.from(body);
  for (let i = 0; i < out.length; ++i) {
    out[i] ^= key[i % 4];
  }
  return Buffer.concat([Buffer.from(head), key, out]);
}

export function closeFrame(code, reason, options = {}) {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code, 0);
  payload.write(reason, 2);
  return frame(CLOSE, payload, options);
}

// Reads frames from the bytes of a stream, in any pieces: push() each piece, then take whole
// frames with next() (null when the next one is not whole yet). Each frame says whether it was
// masked, and its payload is unmasked. The pieces are joined once a frame is whole, not at each
// push (a frame of megabytes comes in hundreds of pieces).
export class FrameReader {
  constructor() {
    this.chunks = [];
    this.size = 0;
  }
  push(piece) {
    this.chunks.push(piece);
    this.size += piece.length;
  }
  // The first `n` bytes in one buffer (joining the pieces when the first is shorter).
  front(n) {
    if (this.chunks[0].length < n) {
      this.chunks = [Buffer.concat(this.chunks)];
    }
    return this.chunks[0];
  }
  next() {
    if (this.size < 2) {
      return null;
    }
    let b = this.front(Math.min(this.size, 14));
    let length = b[1] & 0x7f;
    let at = 2;
    if (length === 126) {
      if (b.length < 4) return null;
      length = b.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (b.length < 10) return null;
      length = Number(b.readBigUInt64BE(2));
      at = 10;
    }
    const masked = (b[1] & 0x80) !== 0;
    if (masked) at += 4;
    if (this.size < at + length) {
      return null;
    }
    b = this.front(at + length);
    const key = masked ? b.subarray(at - 4, at) : null;
    const payload = Buffer.from(b.subarray(at, at + length));
    if (masked) {
      for (let i = 0; i < payload.length; ++i) {
        payload[i] ^= key[i % 4];
      }
    }
    this.chunks[0] = b.subarray(at + length);
    this.size -= at + length;
    if (this.chunks[0].length === 0) {
      this.chunks.shift();
    }
    return {fin: (b[0] & 0x80) !== 0, opcode: b[0] & 0x0f, masked, payload};
  }
}
