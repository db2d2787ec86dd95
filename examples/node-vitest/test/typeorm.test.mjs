// TypeORM on a pristine database per test: new DataSource({ ...db.lease.typeorm() }),
// with an EntitySchema (no decorators, so no build step).
import { DataSource, EntitySchema } from 'typeorm';
import { test, expect } from 'vitest';
import { pristineDatabase } from 'pristine-client/vitest';
import { SEED, record } from './isolation.mjs';

const Note = new EntitySchema({
  name: 'Note',
  tableName: 'notes',
  columns: {
    id: { type: Number, primary: true, generated: true },
    author: { type: String },
    body: { type: String },
  },
});

const db = pristineDatabase({ per: 'test' });

async function open() {
  const ds = new DataSource({ ...db.lease.typeorm(), entities: [Note], synchronize: false, logging: false });
  return ds.initialize();
}

for (const n of [1, 2]) {
  test(`TypeORM test ${n} starts from the template and sees only its own writes`, async () => {
    const ds = await open();
    try {
      const notes = ds.getRepository('Note');
      expect((await notes.find({ order: { id: 'ASC' } })).map(({ author, body }) => ({ author, body }))).toEqual(SEED);
      await notes.save({ author: `typeorm-${n}`, body: 'mine' });
      expect(await notes.count()).toBe(3);
      expect((await notes.findOneBy({ author: `typeorm-${n}` })).body).toBe('mine');
      record(db.lease, `typeorm-${n}`);
    } finally {
      await ds.destroy();
    }
  });
}
