class Mark < ApplicationRecord
end
