from django.test import TestCase

from shop.models import Product


class CatalogTests(TestCase):
    def test_seeded_products(self):
        self.assertEqual(Product.objects.count(), 800)

    def test_search_by_title(self):
        self.assertEqual(Product.objects.filter(title__contains="gizmo").count(), 200)

    def test_price_update_is_rolled_back_after_the_test(self):
        Product.objects.update(price_cents=1)
        self.assertEqual(Product.objects.filter(price_cents=1).count(), 800)
