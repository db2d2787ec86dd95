from django.db import IntegrityError
from django.test import TestCase

from shop.models import Customer


class CustomerTests(TestCase):
    def test_email_is_unique(self):
        Customer.objects.create(email="bob@example.com", name="Bob")
        with self.assertRaises(IntegrityError):
            Customer.objects.create(email="bob@example.com", name="Bobby")

    def test_no_customers_leak_between_tests(self):
        self.assertEqual(Customer.objects.count(), 0)
