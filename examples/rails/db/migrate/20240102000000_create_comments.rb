class CreateComments < ActiveRecord::Migration[6.1]
  def change
    create_table :comments do |t|
      t.references :post, null: false, foreign_key: true
      t.string :author, null: false
      t.text :body
      t.timestamps
    end
    # Rows the tests that commit write: which process wrote them.
    create_table :marks do |t|
      t.integer :pid, null: false
      t.string :test, null: false
    end
  end
end
