from django.test import TransactionTestCase

from shop.models import Customer, Product, place_order


class CommittedOrderTests(TransactionTestCase):
    """Commits for real; Django flushes the tables after each test."""

    def test_committed_order(self):
        c = Customer.objects.create(email="carol@example.com", name="Carol")
        Product.objects.create(sku="NEW1", title="new", price_cents=500, stock=3)
        order = place_order(c, [(Product.objects.get(sku="NEW1"), 3)])
        self.assertEqual(order.total_cents(), 1500)
