from django.contrib.auth.models import User
from django.test import TestCase


class AuthTests(TestCase):
    def test_create_user_and_check_password(self):
        u = User.objects.create_user("dave", password="s3cret")
        self.assertTrue(u.check_password("s3cret"))

    def test_superuser(self):
        u = User.objects.create_superuser("erin", "erin@example.com", "pw")
        self.assertTrue(u.is_staff and u.is_superuser)
