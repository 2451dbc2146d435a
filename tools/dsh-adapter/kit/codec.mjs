// The value codec: JavaScript values <-> the wire form of spec section 3.11.
//
// On the wire a JS value is JSON in which an object carrying a string "$js" key is a
// token for what JSON cannot say (undefined, NaN, -0, BigInt, a throwing getter, a class
// instance, a cycle, ...). `decode` builds the real JS value a token denotes, `encode`
// describes a live JS value in tokens. Both keep property order (it decides which
// offending item a snapshot meets first, P13).
//
// Two tokens refer beyond themselves (kit/realm.py, kit/value_refs.py): a getter
// `{"$js":"getter","id":g}` is an accessor whose reads run the scenario's getter g (the
// realm's `getter(id)` makes its get function), and `{"$js":"shared","id":s,"value":v}` /
// `{"$js":"shared","id":s}` is one object reached twice in one decoded value. Accessors
// the decoder made are remembered, so `encode` names them without running them.

import { types } from 'node:util'

const { isProxy } = types

export class DecodeError extends Error {
  constructor(message) {
    super(message)
    this.name = 'DecodeError'
  }
}

const ERROR_CLASSES = {
  Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError,
}

const BUILTIN_INSTANCES = {
  Map: () => new Map(),
  Set: () => new Set(),
  WeakMap: () => new WeakMap(),
  WeakSet: () => new WeakSet(),
  RegExp: () => /(?:)/,
  Promise: () => Promise.resolve(),
  ArrayBuffer: () => new ArrayBuffer(0),
  String: () => new String(''), // eslint-disable-line no-new-wrappers
  Number: () => new Number(0), // eslint-disable-line no-new-wrappers
  Boolean: () => new Boolean(false), // eslint-disable-line no-new-wrappers
  URL: () => new URL('about:blank'),
}
const TYPED_ARRAYS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'DataView']

function tokenOf(v) {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.$js === 'string') return v.$js
  return undefined
}

function defineData(target, key, value) {
  // createDataProperty semantics: "__proto__" is an own key, never the prototype. Every
  // target here is an object the codec just made (never a proxy, always extensible), so a
  // plain assignment of a key found neither on it nor on its prototypes makes the very same
  // property (own, writable, enumerable, configurable, in the same place), much cheaper; a
  // key found there (an inherited setter such as __proto__, a read-only property, an own
  // property to replace) is defined.
  if (!(key in target)) target[key] = value
  else Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

function namedClass(name, Base) {
  const holder = Base === undefined ? { [name]: class {} } : { [name]: class extends Base {} }
  return holder[name]
}

/**
 * Build the JS value a wire value denotes.
 * @param {*} wire - the wire form.
 * @param {{HarnessError: Function}} realm - the classes tokens refer to.
 * @returns {*} a fresh JS value (never shared with an earlier decode).
 */
export function decode(wire, realm, origins) {
  return decodeIn(wire, realm, Object.assign([], { shared: new Map() }), origins)
}

/** get function -> the wire token it was decoded from (getter and getter-throws tokens). */
const accessorWires = new WeakMap()

function decodeIn(wire, realm, stack, origins) {
  const value = decodeValue(wire, realm, stack, origins)
  if (origins !== undefined && value !== null && (typeof value === 'object' || typeof value === 'function')) {
    if (!origins.has(value)) origins.set(value, wire)
  }
  return value
}

function decodeValue(wire, realm, stack, origins) {
  if (wire === null || typeof wire !== 'object') return wire
  if (Array.isArray(wire)) return decodeArray(wire, realm, stack, origins)
  const kind = tokenOf(wire)
  if (kind === undefined) return decodeObject(wire, Object.prototype, realm, stack, origins)
  switch (kind) {
    case 'undefined': return undefined
    case 'NaN': return NaN
    case 'Infinity': return Infinity
    case '-Infinity': return -Infinity
    case '-0': return -0
    case 'bigint': return BigInt(wire.value ?? '0')
    case 'symbol': return wire.description === undefined ? Symbol() : Symbol(wire.description) // eslint-disable-line symbol-description
    case 'function': {
      const name = typeof wire.name === 'string' ? wire.name : ''
      return { [name]: function () {} }[name]
    }
    case 'date': return new Date(wire.value ?? NaN)
    case 'instance': return decodeInstance(String(wire.class ?? 'Object'))
    case 'cycle': {
      const up = Number(wire.up ?? 1)
      if (!(up >= 1 && up <= stack.length)) throw new DecodeError(`a cycle token points ${up} containers up, but only ${stack.length} enclose it`)
      return stack[stack.length - up]
    }
    case 'hole': throw new DecodeError('a hole token is only allowed as an array element')
    case 'getter-throws': throw new DecodeError('a getter-throws token is only allowed as a property value')
    case 'getter': throw new DecodeError('a getter token is only allowed as a property value')
    case 'shared': {
      const id = String(wire.id)
      if (!('value' in wire)) {
        if (!stack.shared.has(id)) throw new DecodeError(`shared object ${JSON.stringify(id)} is reached before it is defined`)
        return stack.shared.get(id)
      }
      const obj = decodeIn(wire.value, realm, stack, origins)
      stack.shared.set(id, obj)
      return obj
    }
    case 'array': {
      const arr = decodeArray(wire.items ?? [], realm, stack, origins)
      stack.push(arr)
      for (const [k, v] of Object.entries(wire.extra ?? {})) setProp(arr, k, v, realm, stack, origins)
      stack.pop()
      return arr
    }
    case 'object': {
      const obj = decodeObject(wire.entries ?? {}, Object.prototype, realm, stack, origins)
      stack.push(obj)
      for (let i = 0; i < Number(wire.symbolKeys ?? 0); i++) defineData(obj, Symbol(`symbol-key-${i}`), true)
      for (const [k, v] of Object.entries(wire.hidden ?? {})) {
        Object.defineProperty(obj, k, { value: decodeIn(v, realm, stack, origins), writable: true, enumerable: false, configurable: true })
      }
      stack.pop()
      return obj
    }
    case 'null-proto': return decodeObject(wire.entries ?? {}, null, realm, stack, origins)
    case 'error': return decodeError(wire, realm, stack, origins)
    case 'hostile': return hostile()
    case 'promise': {
      if ('rejects' in wire) {
        const p = Promise.reject(decodeIn(wire.rejects, realm, stack, origins))
        p.catch(() => {}) // handled by whoever awaits it; never an unhandled rejection here
        return p
      }
      return Promise.resolve(decodeIn('resolves' in wire ? wire.resolves : { $js: 'undefined' }, realm, stack, origins))
    }
    default: throw new DecodeError(`unknown token {"$js": ${JSON.stringify(kind)}}`)
  }
}

function decodeArray(items, realm, stack, origins) {
  const arr = new Array(items.length)
  stack.push(arr)
  items.forEach((item, i) => {
    if (tokenOf(item) === 'hole') return
    setProp(arr, String(i), item, realm, stack, origins)
  })
  stack.pop()
  return arr
}

function decodeObject(entries, proto, realm, stack, origins) {
  const obj = Object.create(proto)
  stack.push(obj)
  for (const [k, v] of Object.entries(entries)) setProp(obj, k, v, realm, stack, origins)
  stack.pop()
  return obj
}

function setProp(target, key, wire, realm, stack, origins, enumerable = true) {
  const get = accessorFor(wire, realm, origins)
  if (get !== undefined) {
    Object.defineProperty(target, key, { get, enumerable, configurable: true })
    return
  }
  const value = decodeIn(wire, realm, stack, origins)
  if (enumerable) defineData(target, key, value)
  else Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true })
}

/** The get function of an accessor token (getter-throws, getter), else undefined. */
function accessorFor(wire, realm, origins) {
  let get
  switch (tokenOf(wire)) {
    case 'getter-throws': {
      const thrown = () => ('thrown' in wire ? decodeIn(wire.thrown, realm, Object.assign([], { shared: new Map() }), origins) : new Error(String(wire.message ?? '')))
      get = function () { throw thrown() }
      break
    }
    case 'getter': {
      if (typeof realm?.getter !== 'function') throw new DecodeError('a getter token needs a run that declares getters')
      get = realm.getter(String(wire.id))
      break
    }
    default: return undefined
  }
  accessorWires.set(get, wire)
  return get
}

function decodeInstance(cls) {
  if (Object.hasOwn(BUILTIN_INSTANCES, cls)) return BUILTIN_INSTANCES[cls]()
  if (TYPED_ARRAYS.includes(cls)) return cls === 'DataView' ? new DataView(new ArrayBuffer(0)) : new globalThis[cls](0)
  const C = namedClass(cls)
  return new C()
}

// An error token's fields are decoded in this order (kit/value_refs.py TOKEN_PARTS).
// `message`, `name` and `code` may hold any value, or an accessor token; `cause` any value.
function decodeError(wire, realm, stack, origins) {
  const cls = String(wire.class ?? 'Error')
  const options = 'cause' in wire ? { cause: decodeIn(wire.cause, realm, stack, origins) } : undefined
  const plain = typeof wire.message === 'string' ? wire.message : ''
  let error
  if (wire.harness) {
    const Harness = realm.HarnessError
    const C = cls === 'HarnessError' ? Harness : namedClass(cls, Harness)
    error = new C(plain, undefined, options)
  } else if (cls === 'DOMException') {
    error = new DOMException(plain, typeof wire.name === 'string' ? wire.name : 'Error')
    if (options) Object.defineProperty(error, 'cause', { value: options.cause, writable: true, enumerable: false, configurable: true })
  } else {
    const C = Object.hasOwn(ERROR_CLASSES, cls) ? ERROR_CLASSES[cls] : namedClass(cls, Error)
    error = new C(plain, options)
    if (!Object.hasOwn(ERROR_CLASSES, cls)) Object.defineProperty(C.prototype, 'name', { value: cls, writable: true, configurable: true })
  }
  // An Error's own message is not enumerable; a HarnessError's name and code are own
  // enumerable fields (set in its constructor); other errors' name comes from the prototype.
  if (wire.message !== undefined && typeof wire.message !== 'string') setProp(error, 'message', wire.message, realm, stack, origins, false)
  const namedHere = wire.harness || (cls !== 'DOMException' && wire.name !== cls)
  if (wire.name !== undefined && namedHere) setProp(error, 'name', wire.name, realm, stack, origins, Boolean(wire.harness))
  if (wire.code !== undefined || wire.harness) setProp(error, 'code', wire.code === undefined ? { $js: 'undefined' } : wire.code, realm, stack, origins, true)
  return error
}

function hostile() {
  const trap = () => { throw new Error('hostile value') }
  return new Proxy({}, {
    get: trap, has: trap, getPrototypeOf: trap, ownKeys: trap, getOwnPropertyDescriptor: trap,
    set: trap, defineProperty: trap, deleteProperty: trap, isExtensible: trap, preventExtensions: trap,
    setPrototypeOf: trap,
  })
}

// ------------------------------------------------------------------------------- encode

/**
 * Describe a live JS value in wire form. Never throws: a value whose inspection throws
 * is `{"$js":"hostile"}`, a property whose read throws is a getter-throws token.
 * @param {*} value - any JS value.
 * @param {{HarnessError: Function}} realm - to recognize HarnessError instances.
 */
export function encode(value, realm, origins) {
  return encodeIn(value, realm, [], origins)
}

const canonicalWires = new WeakMap()

/** The canonical encoding of what `wire` denotes (encode of a fresh decode), or undefined. */
function canonicalOf(wire, realm) {
  if (wire === null || typeof wire !== 'object') return JSON.stringify(encode(wire, realm))
  if (!canonicalWires.has(wire)) {
    let text
    try {
      text = JSON.stringify(encode(decode(wire, realm), realm))
    } catch {
      text = undefined // e.g. a cycle token pointing outside this fragment
    }
    canonicalWires.set(wire, text)
  }
  return canonicalWires.get(wire)
}

function encodeIn(v, realm, stack, origins) {
  // A value decoded from the scenario is reported in the very form the scenario wrote it
  // (say, an error token without its default name, or an escaped literal object), but only
  // while its canonical encoding is still that of the authored form: a value changed since
  // is encoded from what it is now.
  if (origins !== undefined && v !== null && (typeof v === 'object' || typeof v === 'function') && origins.has(v)) {
    const wire = origins.get(v)
    const authored = canonicalOf(wire, realm)
    if (authored !== undefined && authored === JSON.stringify(encodeIn(v, realm, stack, undefined))) return structuredClone(wire)
  }
  switch (typeof v) {
    case 'undefined': return { $js: 'undefined' }
    case 'boolean': case 'string': return v
    case 'number':
      if (Number.isNaN(v)) return { $js: 'NaN' }
      if (v === Infinity) return { $js: 'Infinity' }
      if (v === -Infinity) return { $js: '-Infinity' }
      if (Object.is(v, -0)) return { $js: '-0' }
      return v
    case 'bigint': return { $js: 'bigint', value: v.toString() }
    case 'symbol': return v.description === undefined ? { $js: 'symbol' } : { $js: 'symbol', description: v.description }
    case 'function': {
      let name = ''
      try { name = typeof v.name === 'string' ? v.name : '' } catch { name = '' }
      return name ? { $js: 'function', name } : { $js: 'function' }
    }
  }
  if (v === null) return null
  const at = stack.indexOf(v)
  if (at >= 0) return { $js: 'cycle', up: stack.length - at }
  try {
    return encodeObject(v, realm, stack, origins)
  } catch {
    return { $js: 'hostile' }
  }
}

function readProp(obj, key, realm, stack, origins, desc = Object.getOwnPropertyDescriptor(obj, key)) {
  if (desc !== undefined && 'value' in desc) return encodeIn(desc.value, realm, stack, origins)
  if (desc?.get !== undefined && accessorWires.has(desc.get)) return structuredClone(accessorWires.get(desc.get))
  try {
    return encodeIn(obj[key], realm, stack, origins)
  } catch (thrown) {
    if (thrown instanceof Error && Object.getPrototypeOf(thrown) === Error.prototype) return { $js: 'getter-throws', message: thrown.message }
    return { $js: 'getter-throws', thrown: encodeIn(thrown, realm, [], origins) }
  }
}

function encodeObject(v, realm, stack, origins) {
  const proto = Object.getPrototypeOf(v)
  if (Array.isArray(v) && proto === Array.prototype) {
    stack.push(v)
    const items = []
    for (let i = 0; i < v.length; i++) items.push(Object.hasOwn(v, i) ? readProp(v, String(i), realm, stack, origins) : { $js: 'hole' })
    const extra = {}
    let hasExtra = false
    for (const key of Reflect.ownKeys(v)) {
      if (typeof key !== 'string' || key === 'length' || isIndex(key, v.length)) continue
      defineData(extra, key, readProp(v, key, realm, stack, origins))
      hasExtra = true
    }
    stack.pop()
    return hasExtra ? { $js: 'array', items, extra } : items
  }
  if (isError(v)) return encodeError(v, realm, stack, origins)
  if (v instanceof Date) return { $js: 'date', value: Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString() }
  if (proto === Object.prototype || proto === null) {
    stack.push(v)
    const entries = {}
    const hidden = {}
    let symbolKeys = 0
    let hasHidden = false
    const proxy = isProxy(v)
    for (const key of Reflect.ownKeys(v)) {
      if (typeof key === 'symbol') { symbolKeys++; continue }
      const desc = Object.getOwnPropertyDescriptor(v, key)
      // The descriptor is read once for both questions where reading it has no effect (an
      // ordinary object); a proxy's trap is asked twice, as it always was.
      const read = proxy ? readProp(v, key, realm, stack, origins) : readProp(v, key, realm, stack, origins, desc)
      if (desc.enumerable) defineData(entries, key, read)
      else { defineData(hidden, key, read); hasHidden = true }
    }
    stack.pop()
    if (proto === null) return { $js: 'null-proto', entries }
    if (symbolKeys || hasHidden) {
      const out = { $js: 'object', entries }
      if (symbolKeys) out.symbolKeys = symbolKeys
      if (hasHidden) out.hidden = hidden
      return out
    }
    return Object.hasOwn(entries, '$js') ? { $js: 'object', entries } : entries
  }
  let cls = 'Object'
  try {
    const ctor = proto?.constructor
    if (typeof ctor === 'function' && ctor.name) cls = ctor.name
  } catch { /* keep Object */ }
  return { $js: 'instance', class: cls }
}

function isIndex(key, length) {
  return /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < length
}

function isError(v) {
  return v instanceof Error || (typeof DOMException === 'function' && v instanceof DOMException)
}

function encodeError(e, realm, stack, origins) {
  let cls = 'Error'
  try { cls = e.constructor?.name || 'Error' } catch { /* keep Error */ }
  const out = { $js: 'error', class: cls }
  if (Object.hasOwn(e, 'cause')) out.cause = readProp(e, 'cause', realm, stack, origins)
  // The message as the token says it: a string (own or the prototype's ""), another value,
  // or the accessor token of one that is a getter.
  out.message = Object.hasOwn(e, 'message') ? readProp(e, 'message', realm, stack, origins) : safeRead(() => String(e.message), '')
  const harness = realm?.HarnessError !== undefined && e instanceof realm.HarnessError
  const name = Object.hasOwn(e, 'name') ? readProp(e, 'name', realm, stack, origins) : encodeIn(safeRead(() => e.name, undefined), realm, stack, origins)
  if (harness) {
    out.name = name
    out.code = Object.hasOwn(e, 'code') ? readProp(e, 'code', realm, stack, origins) : { $js: 'undefined' }
    out.harness = true
    return out
  }
  if (name !== cls) out.name = name
  if (Object.hasOwn(e, 'code')) out.code = readProp(e, 'code', realm, stack, origins)
  return out
}

function safeRead(fn, fallback) {
  try { return fn() } catch { return fallback }
}

// ------------------------------------------------------------------------------- frozenness

/**
 * Whether every object reachable from `value` through own data properties is frozen
 * (spec 3.1 "deeply immutable"), checked in JS with Object.isFrozen.
 */
export function isDeeplyFrozen(value) {
  const seen = new Set()
  const walk = (v) => {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return true
    if (seen.has(v)) return true
    seen.add(v)
    try {
      if (!Object.isFrozen(v)) return false
      for (const key of Reflect.ownKeys(v)) {
        const desc = Object.getOwnPropertyDescriptor(v, key)
        if ('value' in desc && !walk(desc.value)) return false
      }
      return true
    } catch {
      return false
    }
  }
  return walk(value)
}
