"""The example's code under test."""


def give_karma(db, email, points):
    with db.cursor() as c:
        n = c.execute("UPDATE users SET karma = karma + %s WHERE email = %s", (points, email))
        if n == 0:
            raise KeyError(email)
    db.commit()


def total_karma(db):
    with db.cursor() as c:
        c.execute("SELECT COALESCE(SUM(karma), 0) FROM users")
        return int(c.fetchone()[0])
