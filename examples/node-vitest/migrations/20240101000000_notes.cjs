exports.up = (knex) =>
  knex.schema.createTable('notes', (t) => {
    t.increments('id');
    t.string('author', 100).notNullable();
    t.string('body', 200).notNullable();
  });

exports.down = (knex) => knex.schema.dropTable('notes');
