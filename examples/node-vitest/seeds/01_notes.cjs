// The rows every test starts from.
exports.seed = async (knex) => {
  await knex('notes').insert([
    { author: 'seed', body: 'first' },
    { author: 'seed', body: 'second' },
  ]);
  await knex('tags').insert([{ note_id: 1, tag: 'welcome' }]);
};
