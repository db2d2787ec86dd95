"""A reporting suite of the example shop (examples/django) whose classes
each load a large state in setUpTestData: BENCH_ROWS customers, an order
each and three lines per order. scripts/bench-django-fork.sh copies it into
the shop's tests and runs it with TestCase (setUpTestData in every class,
process and run; each test in a transaction rolled back) and with
ForkTestCase (BENCH_FORK=1: setUpTestData once per fork; each test on a
fresh lease of it)."""

import os

from django.db.models import Count, Sum
from django.test import TestCase

from pristine_client.django.testcases import ForkTestCase
from shop.models import Customer, Order, OrderLine, Product

ROWS = int(os.environ.get("BENCH_ROWS", "2000"))
CLASSES = int(os.environ.get("BENCH_CLASSES", "4"))
Base = ForkTestCase if os.environ.get("BENCH_FORK") else TestCase


class Reports:
    """The state and the tests every class has."""

    @classmethod
    def setUpTestData(cls):
        Customer.objects.bulk_create([Customer(email=f"r{i}@example.com", name=f"Reader {i}") for i in range(ROWS)],
                                     batch_size=1000)
        customers = list(Customer.objects.filter(email__startswith="r").order_by("id"))
        Order.objects.bulk_create([Order(customer=c, status="paid" if i % 3 else "open") for i, c in enumerate(customers)],
                                  batch_size=1000)
        orders = list(Order.objects.filter(customer__email__startswith="r").order_by("id"))
        products = list(Product.objects.order_by("id")[:30])
        OrderLine.objects.bulk_create([OrderLine(order=o, product=products[(i + j) % len(products)], quantity=1 + j,
                                                 unit_cents=products[(i + j) % len(products)].price_cents)
                                       for i, o in enumerate(orders) for j in range(3)], batch_size=2000)

    def test_revenue_by_status(self):
        paid = OrderLine.objects.filter(order__status="paid", order__customer__email__startswith="r")
        self.assertEqual(paid.count(), 3 * (ROWS - (ROWS + 2) // 3))
        self.assertGreater(paid.aggregate(s=Sum("unit_cents"))["s"], 0)

    def test_top_products(self):
        top = (OrderLine.objects.filter(order__customer__email__startswith="r").values("product")
               .annotate(n=Count("id")).order_by("-n"))
        self.assertEqual(sum(r["n"] for r in top), 3 * ROWS)

    def test_close_open_orders(self):
        n = Order.objects.filter(status="open", customer__email__startswith="r").update(status="closed")
        self.assertEqual(n, (ROWS + 2) // 3)


for k in range(CLASSES):
    globals()[f"Reports{k}Tests"] = type(f"Reports{k}Tests", (Reports, Base), {"__module__": __name__})
