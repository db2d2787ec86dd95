// The content key against the vectors every client shares, and its errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { contentKey } from '../index.mjs';
import { REPO } from './daemon.mjs';

function tree(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pristine-key-'));
  for (const [name, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), body);
  }
  return dir;
}

const vectors = JSON.parse(fs.readFileSync(path.join(REPO, 'testdata', 'contentkey', 'vectors.json'), 'utf8'));

test('there are shared vectors', () => assert.ok(vectors.vectors.length >= 5));

for (const c of vectors.vectors) {
  test(`vector: ${c.name}`, () => {
    const dir = tree(c.files);
    try {
      assert.equal(contentKey(c.patterns, c.extra, { cwd: dir }), c.key);
      // Absolute patterns give the same key.
      assert.equal(contentKey(c.patterns.map((p) => path.join(dir, p)), c.extra), c.key);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });
}

test('any change of a name, a byte or an extra string changes the key', () => {
  const base = { 'm/001.sql': 'CREATE TABLE a (id INT);', 'm/sub/002.sql': 'CREATE TABLE b (id INT);' };
  const key = (files, extra = []) => contentKey(['m'], extra, { cwd: tree(files) });
  const k0 = key(base);
  assert.equal(key(base), k0, 'the same files elsewhere');
  assert.notEqual(key({ ...base, 'm/001.sql': 'CREATE TABLE a (id BIGINT);' }), k0);
  assert.notEqual(key({ 'm/001.sql': base['m/001.sql'], 'm/sub/003.sql': base['m/sub/002.sql'] }), k0);
  assert.notEqual(key({ ...base, 'm/x': '' }), k0);
  assert.notEqual(key(base, ['knex 3']), k0);
});

test('a pattern that matches nothing is an error naming it', () => {
  assert.throws(() => contentKey(['nope/*.sql'], [], { cwd: os.tmpdir() }), /"nope\/\*\.sql" matches no file: name the migrations/);
  assert.throws(() => contentKey([], []), /no files/);
});
