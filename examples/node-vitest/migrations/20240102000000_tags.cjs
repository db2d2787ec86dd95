exports.up = (knex) =>
  knex.schema.createTable('tags', (t) => {
    t.increments('id');
    t.integer('note_id').unsigned().notNullable().references('notes.id');
    t.string('tag', 50).notNullable();
  });

exports.down = (knex) => knex.schema.dropTable('tags');
