from django.test import TestCase

from shop.models import Customer, Order, Product, place_order


class OrderTests(TestCase):
    def setUp(self):
        self.alice = Customer.objects.create(email="alice@example.com", name="Alice")

    def test_place_order_takes_stock(self):
        p = Product.objects.get(sku="SKU00001")
        before = p.stock
        order = place_order(self.alice, [(p, 2)])
        p.refresh_from_db()
        self.assertEqual(p.stock, before - 2)
        self.assertEqual(order.total_cents(), 2 * p.price_cents)

    def test_out_of_stock_places_nothing(self):
        p = Product.objects.get(sku="SKU00002")
        with self.assertRaises(ValueError):
            place_order(self.alice, [(p, p.stock + 1)])
        self.assertEqual(Order.objects.count(), 0)
