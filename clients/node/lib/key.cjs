'use strict';
// Content keys of templates: a hash of the files that define them. The
// algorithm is the Go client's (client.ContentKey), checked against the
// shared vectors in testdata/contentkey/vectors.json, so suites in
// different languages keyed by the same files share one template.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const META = /[*?[\\]/;

// byteCompare sorts strings as Go does: by their UTF-8 bytes.
function byteCompare(a, b) {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

// matchToRegExp turns one path element of a Go filepath.Match pattern
// into a RegExp: * and ? never match '/', [...] and [^...] are classes,
// backslash escapes.
function matchToRegExp(pat) {
  let re = '^';
  for (let i = 0; i < pat.length; i++) {
    const c = pat[i];
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\') {
      i++;
      if (i >= pat.length) throw new Error('syntax error in pattern');
      re += pat[i].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else if (c === '[') {
      let j = i + 1;
      let cls = '[';
      if (pat[j] === '^') {
        cls += '^';
        j++;
      }
      let closed = false;
      let n = 0;
      for (; j < pat.length; j++) {
        if (pat[j] === ']' && n > 0) {
          closed = true;
          break;
        }
        if (pat[j] === '\\') {
          j++;
          if (j >= pat.length) break;
        }
        cls += pat[j] === '-' && n > 0 && pat[j + 1] !== ']' ? '-' : pat[j].replace(/[\]\\^-]/g, '\\$&');
        n++;
      }
      if (!closed) throw new Error('syntax error in pattern');
      re += cls + ']';
      i = j;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(re + '$', 's');
}

function lexists(p) {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

// glob follows Go's filepath.Glob: a pattern without meta characters
// matches itself when it exists; otherwise each directory level with meta
// characters is listed and matched, dotfiles included.
function glob(pattern) {
  if (!META.test(pattern)) return lexists(pattern) ? [pattern] : [];
  let dir = path.dirname(pattern);
  const file = path.basename(pattern);
  if (pattern.endsWith('/')) return [];
  let dirs;
  if (dir === pattern) dirs = [dir];
  else if (META.test(dir)) dirs = glob(dir);
  else dirs = [dir];
  const re = matchToRegExp(file);
  const out = [];
  for (const d of dirs) {
    let names;
    try {
      if (!fs.statSync(d).isDirectory()) continue;
      names = fs.readdirSync(d);
    } catch {
      continue;
    }
    names.sort(byteCompare);
    for (const n of names) if (re.test(n)) out.push(dir === '.' && !pattern.startsWith('./') ? n : path.join(d, n));
  }
  return out;
}

// walk yields the files under p in the order Go's filepath.WalkDir visits
// them (names sorted by bytes; symbolic links not followed into).
function* walk(p) {
  const st = fs.lstatSync(p);
  if (!st.isDirectory()) {
    yield p;
    return;
  }
  const names = fs.readdirSync(p).sort(byteCompare);
  for (const n of names) yield* walk(path.join(p, n));
}

/**
 * Hashes the files that define a template (migrations, fixtures, schema
 * dumps). Each pattern is a file, a directory (every file under it) or a
 * glob (Go's filepath.Glob syntax: *, ?, [...]); names are hashed relative
 * to the pattern's base, so the key does not depend on where the checkout
 * lives. Relative patterns are taken from `cwd` (default process.cwd()).
 * Extra strings (a tool's version, a setting) are hashed too.
 */
function contentKey(patterns, extra = [], { cwd } = {}) {
  if (typeof patterns === 'string') patterns = [patterns];
  const base = cwd || process.cwd();
  const h = crypto.createHash('sha256');
  h.update('pristine-content-key-v1\0');
  for (const e of extra) h.update(Buffer.concat([Buffer.from('extra\0'), Buffer.from(String(e)), Buffer.from('\0')]));
  let n = 0;
  for (const pat of patterns) {
    const abs = path.isAbsolute(pat) ? pat : path.join(base, pat);
    let matches;
    try {
      matches = glob(abs);
    } catch (e) {
      throw new Error(`content key: pattern ${JSON.stringify(pat)}: ${e.message}`);
    }
    if (matches.length === 0) {
      throw new Error(`content key: ${JSON.stringify(pat)} matches no file: name the migrations and fixtures that define the template`);
    }
    matches.sort(byteCompare);
    for (const m of matches) {
      const dir = path.dirname(m);
      for (const file of walk(m)) {
        const rel = path.relative(dir, file).split(path.sep).join('/');
        const data = fs.readFileSync(file);
        h.update(Buffer.from(`file\0${rel}\0${data.length}\0`));
        h.update(data);
        n++;
      }
    }
  }
  if (n === 0 && extra.length === 0) {
    throw new Error('content key: no files: name the migrations and fixtures that define the template');
  }
  return h.digest('hex');
}

module.exports = { contentKey, glob };
