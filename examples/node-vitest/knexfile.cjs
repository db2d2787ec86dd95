// knex's configuration: the database is the one in the environment, which
// pristine sets for the template's build (MYSQL_HOST, MYSQL_PORT,
// MYSQL_USER, MYSQL_PWD, MYSQL_DATABASE) and a test can take from its lease
// (pristineDatabase({ env: true })).
module.exports = {
  client: 'mysql2',
  connection: {
    host: process.env.MYSQL_HOST || '127.0.0.1',
    port: Number(process.env.MYSQL_PORT || 3306),
    user: process.env.MYSQL_USER,
    password: process.env.MYSQL_PWD,
    database: process.env.MYSQL_DATABASE,
  },
  migrations: { directory: './migrations', loadExtensions: ['.cjs'] },
  seeds: { directory: './seeds', loadExtensions: ['.cjs'] },
};
